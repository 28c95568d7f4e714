/** `createLimiter`: policies + store + deadline + breaker + fail modes + deny cache, one decision per call. */
import { identityTag, policyKey, requestKeys } from '../keys/build-keys.js';
import { definePolicies } from '../policy/define-policy.js';
import { describeValue } from '../policy/errors.js';
import { MemoryStore } from '../stores/memory-store.js';
import type {
  CompiledPolicy,
  Decision,
  DecisionEvent,
  DecisionSource,
  Descriptor,
  PolicyResult,
  Store,
  StoreCheckOptions,
  StoreEntry,
  StoreMode,
  StoreVerdict,
} from '../types.js';
import { type BreakerState, CircuitBreaker } from './breaker.js';
import { checkCostRecord, resolveCost, selectPolicies } from './costs.js';
import { DeadlineQueue, withDeadline } from './deadline.js';
import { buildDecision, decisionEvent, resultFromVerdict, unavailableResult } from './decision.js';
import { DenyCache } from './deny-cache.js';
import { type LimiterOptions, resolveLimiterOptions } from './options.js';

/** A configured limiter. Share one per process (per set of policies). */
export interface Limiter {
  /** The compiled policies, in the order given. */
  readonly policies: readonly CompiledPolicy[];
  /** The key prefix. */
  readonly prefix: string;
  /** The store's circuit breaker: `closed` (calling the store), `open` or `half-open`. */
  readonly breakerState: BreakerState;
  /** The compiled policy called `name`; throws a TypeError naming the known policies otherwise. */
  policy(name: string): CompiledPolicy;
  /**
   * Decides and charges one request: every applying policy in one atomic store call.
   * Never rejects because of the store: a failure is outcome `unavailable`, handled per fail mode.
   * Rejects with a TypeError for programmer errors (bad descriptor, unknown policy, bad cost).
   * A key set the store denied recently is denied in-process until its wait is over (source
   * `deny-cache`). With `descriptor.requestId`, a retry within `idempotency.ttlMs` returns the
   * recorded decision and charges nothing.
   */
  check(descriptor: Descriptor): Promise<Decision>;
  /** Like `check`, but charges nothing, skips the deny cache and emits no event. */
  peek(descriptor: Descriptor): Promise<Decision>;
  /**
   * Deletes the state of `identity` for one policy, or all. Route-scoped policies are reset for
   * `route` (or for requests without a route when unset). Rejects when the store fails.
   */
  reset(identity: string, policy?: string, route?: string): Promise<void>;
  /** Subscribes another decision listener (metrics); returns an unsubscribe function. */
  onDecision(listener: (event: DecisionEvent) => void): () => void;
}

type StoreCall = (
  entries: readonly StoreEntry[],
  mode: StoreMode,
  options?: StoreCheckOptions,
) => Promise<StoreVerdict[] | undefined>;

/** The two record keys of an idempotent request: one per store call a check may make. */
interface RequestRecord {
  readonly keys: readonly [string, string];
  readonly ttlMs: number;
}

interface Planned {
  readonly entries: StoreEntry[];
  readonly tag: string;
}

interface Outcome {
  readonly results: PolicyResult[];
  readonly source: DecisionSource;
}

const now = (): number => globalThis.performance?.now() ?? Date.now();

/** The Decision when no policy applies. */
const NO_POLICY: Decision = Object.freeze({
  allowed: true,
  outcome: 'allowed',
  policy: undefined,
  limit: 0,
  remaining: 0,
  resetMs: 0,
  retryAfterMs: 0,
  shadowed: false,
  source: 'store',
  results: Object.freeze([]) as readonly PolicyResult[],
}) as Decision;

/**
 * Builds a limiter. Policies are validated here (a bad one throws `PolicyError`), options too
 * (a bad one throws `TypeError` naming it); nothing fails later on the request path.
 */
export function createLimiter(options: LimiterOptions): Limiter {
  const resolved = resolveLimiterOptions(options);
  const policies = definePolicies(options.policies);
  const byName = new Map(policies.map((p) => [p.name, p] as const));
  const { clock, prefix, timeoutMs } = resolved;
  const store: Store = options.store ?? new MemoryStore({ clock });
  const breaker =
    resolved.breaker === undefined
      ? undefined
      : new CircuitBreaker(resolved.breaker.failureThreshold, resolved.breaker.cooldownMs, clock);
  const denyCache =
    resolved.denyCacheMaxKeys === undefined ? undefined : new DenyCache(resolved.denyCacheMaxKeys);
  const listeners = new Set<(event: DecisionEvent) => void>();
  if (options.onDecision) listeners.add(options.onDecision);
  let localStore: MemoryStore | undefined;
  const local = (): MemoryStore => {
    localStore ??= new MemoryStore({ clock, maxKeys: resolved.localFallbackMaxKeys });
    return localStore;
  };

  function policy(name: string): CompiledPolicy {
    const found = byName.get(name);
    if (found === undefined) {
      throw new TypeError(
        `limiter: unknown policy ${describeValue(name)} (known: ${[...byName.keys()].join(', ')})`,
      );
    }
    return found;
  }

  function plan(descriptor: Descriptor, method: string): Planned {
    if (typeof descriptor !== 'object' || descriptor === null) {
      throw new TypeError(
        `limiter.${method}: the descriptor must be an object, got ${describeValue(descriptor)}`,
      );
    }
    if (typeof descriptor.identity !== 'string') {
      throw new TypeError(
        `limiter.${method}: "identity" must be a string, got ${describeValue(descriptor.identity)}`,
      );
    }
    if (descriptor.route !== undefined && typeof descriptor.route !== 'string') {
      throw new TypeError(
        `limiter.${method}: "route" must be a string, got ${describeValue(descriptor.route)}`,
      );
    }
    checkCostRecord(descriptor.cost, byName, method);
    if (
      method === 'check' &&
      descriptor.requestId !== undefined &&
      (typeof descriptor.requestId !== 'string' || descriptor.requestId === '')
    ) {
      throw new TypeError(
        `limiter.check: "requestId" must be a non-empty string, got ${describeValue(descriptor.requestId)}`,
      );
    }
    const applying = selectPolicies(policies, byName, descriptor.policies, method);
    const tag = identityTag(prefix, descriptor.identity);
    const entries = applying.map((p) => ({
      key: policyKey(tag, p, descriptor.route),
      policy: p,
      cost: resolveCost(p, descriptor, method),
    }));
    return { entries, tag };
  }

  /** The store behind the deadline and the breaker; undefined means it could not decide. */
  const storeCheck = store.check.bind(store);
  const deadlines = new DeadlineQueue(timeoutMs);
  const remote: StoreCall = (entries, mode, options) => {
    const permit = breaker?.permit() ?? 'call';
    if (permit === 'reject') return Promise.resolve(undefined);
    return deadlines
      .run(() => (options === undefined ? storeCheck(entries, mode) : storeCheck(entries, mode, options)))
      .then(
        (verdicts) => {
          if (!Array.isArray(verdicts) || verdicts.length !== entries.length) {
            // The store answered with the wrong number of verdicts: it could not decide.
            breaker?.failure(permit);
            return undefined;
          }
          breaker?.success();
          return verdicts;
        },
        () => {
          breaker?.failure(permit);
          return undefined;
        },
      );
  };

  const fallback: StoreCall = async (entries, mode) => {
    try {
      return await local().check(entries, mode);
    } catch {
      return undefined;
    }
  };

  /**
   * Decides `entries` through `call`. Shadow policies ride in the same atomic call; when only a
   * shadow policy denied (so nothing was charged), the enforcing policies are charged in a second
   * call: a shadow policy observes, it never blocks the others.
   *
   * An idempotent request records each of the (at most two) calls under its own record key,
   * so a retry replays both and charges nothing twice.
   */
  async function decideWith(
    call: StoreCall,
    entries: readonly StoreEntry[],
    mode: StoreMode,
    request?: RequestRecord,
  ): Promise<PolicyResult[] | undefined> {
    const options = (i: 0 | 1): StoreCheckOptions | undefined =>
      request === undefined ? undefined : { requestKey: request.keys[i], requestTtlMs: request.ttlMs };
    const verdicts = await call(entries, mode, options(0));
    if (verdicts === undefined) return undefined;
    const results: PolicyResult[] = new Array(entries.length);
    let shadowDenied = false;
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i]!;
      const r = resultFromVerdict(e.policy, e.cost, verdicts[i]!);
      results[i] = r;
      if (r.shadow && !r.allowed) shadowDenied = true;
    }
    if (mode === 'peek' || !shadowDenied) return results;
    const enforcedIdx = entries.flatMap((e, i) => (e.policy.shadow ? [] : [i]));
    const enforcedAllowed = enforcedIdx.every((i) => results[i]!.allowed);
    if (!shadowDenied || !enforcedAllowed || enforcedIdx.length === 0) return results;
    const again = await call(
      enforcedIdx.map((i) => entries[i]!),
      mode,
      options(1),
    );
    if (again === undefined) return undefined;
    enforcedIdx.forEach((entryIndex, j) => {
      const e = entries[entryIndex]!;
      results[entryIndex] = resultFromVerdict(e.policy, e.cost, again[j]!);
    });
    return results;
  }

  /** The store could not decide: apply each policy's fail mode. */
  async function failover(entries: readonly StoreEntry[], mode: StoreMode): Promise<Outcome> {
    const closed = entries.some((e) => !e.policy.shadow && e.policy.failMode === 'closed');
    const localIdx = entries.flatMap((e, i) => (e.policy.failMode === 'local' ? [i] : []));
    // Under a closed denial nothing may be charged, not even locally.
    const localMode: StoreMode = closed ? 'peek' : mode;
    const localResults =
      localIdx.length > 0
        ? await decideWith(
            fallback,
            localIdx.map((i) => entries[i]!),
            localMode,
          )
        : [];
    const results = entries.map((e) =>
      e.policy.failMode === 'local'
        ? undefined
        : unavailableResult(e.policy, e.cost, e.policy.failMode === 'open'),
    );
    localIdx.forEach((entryIndex, j) => {
      const e = entries[entryIndex]!;
      // If even the in-process limiter failed, a local policy behaves as closed.
      results[entryIndex] = localResults?.[j] ?? unavailableResult(e.policy, e.cost, false);
    });
    const source: DecisionSource = closed ? 'fail-closed' : localIdx.length > 0 ? 'local' : 'fail-open';
    return { results: results as PolicyResult[], source };
  }

  async function decide(
    entries: readonly StoreEntry[],
    mode: StoreMode,
    request?: RequestRecord,
  ): Promise<Outcome> {
    const results = await decideWith(remote, entries, mode, request);
    if (results !== undefined) return { results, source: 'store' };
    return failover(entries, mode);
  }

  function emit(decision: Decision, startedAt: number): void {
    if (listeners.size === 0) return;
    const event = decisionEvent(decision, Math.max(0, now() - startedAt));
    for (const listener of listeners) {
      try {
        listener(event);
      } catch {
        // A listener's failure must not change the decision.
      }
    }
  }

  async function check(descriptor: Descriptor): Promise<Decision> {
    const startedAt = listeners.size > 0 ? now() : 0;
    const { entries, tag } = plan(descriptor, 'check');
    if (entries.length === 0) return NO_POLICY;
    const setKey = () => entries.map((e) => e.key).join('\n');
    const costs = () => entries.map((e) => e.cost);
    // An idempotent retry must get its recorded answer, so it never stops at the deny cache.
    const request: RequestRecord | undefined =
      descriptor.requestId === undefined
        ? undefined
        : { keys: requestKeys(tag, descriptor.requestId), ttlMs: resolved.idempotencyTtlMs };
    let decision: Decision;
    // Read before the store call: the store decided after this moment, so a wait counted from
    // here never outlasts the store's own.
    const askedAtMs = clock();
    const cached =
      request === undefined && denyCache !== undefined && denyCache.size > 0
        ? denyCache.lookup(setKey(), costs(), askedAtMs)
        : undefined;
    if (cached !== undefined) {
      decision = buildDecision(cached, 'deny-cache');
    } else {
      const { results, source } = await decide(entries, 'consume', request);
      decision = buildDecision(results, source);
      if (denyCache && source === 'store' && !decision.allowed)
        denyCache.remember(setKey(), costs(), results, askedAtMs);
    }
    emit(decision, startedAt);
    return decision;
  }

  async function peek(descriptor: Descriptor): Promise<Decision> {
    const { entries } = plan(descriptor, 'peek');
    if (entries.length === 0) return NO_POLICY;
    const { results, source } = await decide(entries, 'peek');
    return buildDecision(results, source);
  }

  async function reset(identity: string, policyName?: string, route?: string): Promise<void> {
    if (typeof identity !== 'string') {
      throw new TypeError(`limiter.reset: "identity" must be a string, got ${describeValue(identity)}`);
    }
    const targets = policyName === undefined ? policies : [policy(policyName)];
    const tag = identityTag(prefix, identity);
    const keys = targets.map((p) => policyKey(tag, p, route));
    denyCache?.forget(keys);
    if (localStore) await localStore.reset(keys);
    await withDeadline(() => store.reset(keys), Math.max(timeoutMs, 1000));
  }

  return {
    policies,
    prefix,
    get breakerState(): BreakerState {
      return breaker?.state ?? 'closed';
    },
    policy,
    check,
    peek,
    reset,
    onDecision(listener) {
      if (typeof listener !== 'function') {
        throw new TypeError(
          `limiter.onDecision: the listener must be a function, got ${describeValue(listener)}`,
        );
      }
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },
  };
}
