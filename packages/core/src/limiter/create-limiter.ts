/** `createLimiter`: policies + store + deadline + breaker + fail modes + deny cache, one decision per call. */
import { identityTag, policyKey, requestKey } from '../keys/build-keys.js';
import { identityProblem, isIdentityInput } from '../keys/identity.js';
import { definePolicies } from '../policy/define-policy.js';
import { describeValue } from '../policy/errors.js';
import { MemoryStore } from '../stores/memory-store.js';
import type {
  CompiledPolicy,
  Decision,
  DecisionEvent,
  DecisionSource,
  Descriptor,
  IdentityInput,
  PolicyResult,
  Store,
  StoreCheckOptions,
  StoreEntry,
  StoreMode,
  StoreVerdict,
} from '../types.js';
import { type BreakerPermit, type BreakerState, CircuitBreaker } from './breaker.js';
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
  /**
   * Keys the in-process stores (a `MemoryStore` store, the local fallback) evicted to stay within
   * their `maxKeys` while the key's state was still live: usage forgotten. No identities, a count.
   */
  readonly liveEvictions: number;
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
   * The identity is the one the requests were checked with, kind included (a string is kind
   * `app`; the adapters' default is `{ kind: 'ip', value: ipIdentity(address) }`).
   */
  reset(identity: IdentityInput, policy?: string, route?: string): Promise<void>;
  /** Subscribes another decision listener (metrics); returns an unsubscribe function. */
  onDecision(listener: (event: DecisionEvent) => void): () => void;
}

/** A value now, or a promise of it: the limiter's steps stay synchronous while the store is. */
type MaybePromise<T> = T | Promise<T>;

/**
 * One store call behind the deadline and the breaker: the verdicts, or undefined when the store
 * could not decide. Synchronous when the store answers synchronously (`Store.decideSync`).
 */
type StoreCall = (
  entries: readonly StoreEntry[],
  mode: StoreMode,
  options?: StoreCheckOptions,
) => MaybePromise<StoreVerdict[] | undefined>;

/** `next(value)`, now when `value` is there, else once it is: a promise hop only when one is due. */
const andThen = <T, U>(value: MaybePromise<T>, next: (value: T) => MaybePromise<U>): MaybePromise<U> =>
  value instanceof Promise ? value.then(next) : next(value);

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
const NO_POLICY_PROMISE: Promise<Decision> = Promise.resolve(NO_POLICY);

/** The deny cache's key for a set of entries. */
const setKeyOf = (entries: readonly StoreEntry[]): string => entries.map((e) => e.key).join('\n');
const costsOf = (entries: readonly StoreEntry[]): number[] => entries.map((e) => e.cost);
const peeked = ({ results, source }: Outcome): Decision => buildDecision(results, source);

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
    resolved.denyCacheMaxKeys === undefined
      ? undefined
      : new DenyCache(resolved.denyCacheMaxKeys, resolved.denyCacheMaxAgeMs);
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
    if (!isIdentityInput(descriptor.identity)) {
      throw new TypeError(identityProblem(`limiter.${method}: "identity"`, descriptor.identity));
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

  /** The store's verdicts, checked: undefined (and a breaker failure) when they do not fit. */
  const accepted = (
    verdicts: unknown,
    entries: readonly StoreEntry[],
    permit: BreakerPermit,
  ): StoreVerdict[] | undefined => {
    if (!Array.isArray(verdicts) || verdicts.length !== entries.length) {
      // The store answered with the wrong number of verdicts: it could not decide.
      breaker?.failure(permit);
      return undefined;
    }
    breaker?.success();
    return verdicts as StoreVerdict[];
  };

  /** The store behind the deadline and the breaker; undefined means it could not decide. */
  const storeCheck = store.decide.bind(store);
  // A store that answers in-process cannot be late: no deadline, no promise per call.
  const storeCheckSync = typeof store.decideSync === 'function' ? store.decideSync.bind(store) : undefined;
  const deadlines = new DeadlineQueue(timeoutMs);
  const remote: StoreCall = (entries, mode, options) => {
    const permit = breaker?.permit() ?? 'call';
    if (permit === 'reject') return undefined;
    if (storeCheckSync !== undefined) {
      let verdicts: unknown;
      try {
        verdicts =
          options === undefined ? storeCheckSync(entries, mode) : storeCheckSync(entries, mode, options);
      } catch {
        breaker?.failure(permit);
        return undefined;
      }
      return accepted(verdicts, entries, permit);
    }
    return deadlines.settle(
      () => (options === undefined ? storeCheck(entries, mode) : storeCheck(entries, mode, options)),
      (verdicts) => accepted(verdicts, entries, permit),
      () => {
        breaker?.failure(permit);
        return undefined;
      },
    );
  };

  const fallback: StoreCall = (entries, mode) => {
    try {
      return local().decideSync(entries, mode);
    } catch {
      return undefined;
    }
  };

  /**
   * Decides `entries` through `call` in one store call and hands the results (undefined: the call
   * could not decide) to `next`, with no promise hop of its own. The store charges shadow and
   * enforced entries alike by the rule of `Store.decide`: a shadow policy observes, it never blocks
   * the others. An idempotent request (`request`) has one record for the whole check.
   */
  function decideWith<T>(
    call: StoreCall,
    entries: readonly StoreEntry[],
    mode: StoreMode,
    request: StoreCheckOptions | undefined,
    next: (results: PolicyResult[] | undefined) => MaybePromise<T>,
  ): MaybePromise<T> {
    return andThen(call(entries, mode, request), (verdicts) => next(resultsOf(entries, verdicts)));
  }

  /** The results of a store call's verdicts (undefined: the store could not decide). */
  function resultsOf(
    entries: readonly StoreEntry[],
    verdicts: StoreVerdict[] | undefined,
  ): PolicyResult[] | undefined {
    if (verdicts === undefined) return undefined;
    const results: PolicyResult[] = new Array(entries.length);
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i]!;
      results[i] = resultFromVerdict(e.policy, e.cost, verdicts[i]!);
    }
    return results;
  }

  /** The store could not decide: apply each policy's fail mode. */
  function failover(entries: readonly StoreEntry[], mode: StoreMode): MaybePromise<Outcome> {
    const closed = entries.some((e) => !e.policy.shadow && e.policy.failMode === 'closed');
    const localIdx = entries.flatMap((e, i) => (e.policy.failMode === 'local' ? [i] : []));
    const finish = (localResults: PolicyResult[] | undefined): Outcome => {
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
    };
    if (localIdx.length === 0) return finish([]);
    // Under a closed denial nothing may be charged, not even locally.
    return decideWith(
      fallback,
      localIdx.map((i) => entries[i]!),
      closed ? 'peek' : mode,
      undefined,
      finish,
    );
  }

  /**
   * Decides `entries` with the store (then the fail modes when it could not) and hands the outcome
   * to `done`. One promise hop after the store's answer in the common case.
   */
  function decide<T>(
    entries: readonly StoreEntry[],
    mode: StoreMode,
    request: StoreCheckOptions | undefined,
    done: (outcome: Outcome) => T,
  ): MaybePromise<T> {
    return decideWith(remote, entries, mode, request, (results) =>
      andThen(results !== undefined ? { results, source: 'store' } : failover(entries, mode), done),
    );
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

  function check(descriptor: Descriptor): Promise<Decision> {
    try {
      const startedAt = listeners.size > 0 ? now() : 0;
      const { entries, tag } = plan(descriptor, 'check');
      if (entries.length === 0) return NO_POLICY_PROMISE;
      // An idempotent retry must get its recorded answer, so it never stops at the deny cache.
      const request: StoreCheckOptions | undefined =
        descriptor.requestId === undefined
          ? undefined
          : {
              requestKey: requestKey(
                tag,
                descriptor.requestId,
                entries.map((e) => e.key),
              ),
              requestTtlMs: resolved.idempotencyTtlMs,
            };
      // Read before the store call: the store decided after this moment, so a wait counted from
      // here never outlasts the store's own.
      const askedAtMs = clock();
      if (request === undefined && denyCache !== undefined && denyCache.size > 0) {
        const cached = denyCache.lookup(setKeyOf(entries), costsOf(entries), askedAtMs);
        if (cached !== undefined) {
          const decision = buildDecision(cached, 'deny-cache');
          emit(decision, startedAt);
          return Promise.resolve(decision);
        }
      }
      const finish = ({ results, source }: Outcome): Decision => {
        const decision = buildDecision(results, source);
        if (denyCache && source === 'store' && !decision.allowed)
          denyCache.remember(setKeyOf(entries), costsOf(entries), results, askedAtMs);
        emit(decision, startedAt);
        return decision;
      };
      // A native promise comes back as it is; a decision made now is wrapped.
      return Promise.resolve(decide(entries, 'consume', request, finish));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  function peek(descriptor: Descriptor): Promise<Decision> {
    try {
      const { entries } = plan(descriptor, 'peek');
      if (entries.length === 0) return NO_POLICY_PROMISE;
      return Promise.resolve(decide(entries, 'peek', undefined, peeked));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  async function reset(identity: IdentityInput, policyName?: string, route?: string): Promise<void> {
    if (!isIdentityInput(identity)) {
      throw new TypeError(identityProblem('limiter.reset: "identity"', identity));
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
    get liveEvictions(): number {
      const fromStore = (store as { liveEvictions?: unknown }).liveEvictions;
      return (typeof fromStore === 'number' ? fromStore : 0) + (localStore?.liveEvictions ?? 0);
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
