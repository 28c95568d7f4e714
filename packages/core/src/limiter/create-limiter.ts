/** `createLimiter`: the policies, and the steps of a check made for them; the calls are in pipeline.ts. */
import { definePolicies } from '../policy/define-policy.js';
import { describeValue } from '../policy/errors.js';
import { MemoryStore } from '../stores/memory-store.js';
import type {
  CompiledPolicy,
  Decision,
  DecisionEvent,
  Descriptor,
  IdentityInput,
  PolicyInput,
  Store,
} from '../types.js';
import { type BreakerState, CircuitBreaker } from './breaker.js';
import { LimiterCounters, type ScriptStats } from './counters.js';
import { type LimiterOptions, resolveLimiterOptions } from './options.js';
import { check, type LimiterParts, peek, reset } from './pipeline.js';
import { policyNamed } from './plan.js';
import { Reservations, type SettleUnits } from './settle.js';
import { composeSteps } from './steps.js';
import type { SettleAnswer } from './store-answer.js';
import { StoreCall } from './store-call.js';

/** A configured limiter. Share one per process (per set of policies). */
export interface Limiter {
  /** The compiled policies, in the order given (the latest `updatePolicies` set). */
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
  /**
   * Store calls and failures by cause, store latency, lease units and remembered denials, read by
   * `createMetrics` when it renders. Numbers only: no identity, key or path.
   */
  readonly counters: LimiterCounters;
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
  /**
   * Settles a decision of a check made with `reserve: true` to the units the request really used:
   * a number for every policy, or a number per policy name (a policy not named keeps its
   * reservation). Every policy the check charged (with only a shadow policy denying, the enforced
   * ones), its difference in one atomic store call: a refund gives back at most what was reserved,
   * never lifts a policy above its capacity nor gives back what the policy earned back since the
   * check; more than reserved is charged in full, up to a debt of one limit (later checks wait until
   * it is repaid). Once per decision: a second settle, and one of a decision that reserved nothing
   * (no `reserve`, denied, fail-open, fail-closed), answers `noop`; a decision of the local
   * fallback settles locally.
   * Never rejects because of the store (`unavailable`); rejects with a TypeError for bad units.
   */
  settle(decision: Decision, units: SettleUnits): Promise<SettleAnswer>;
  /** Subscribes another decision listener (metrics); returns an unsubscribe function. */
  onDecision(listener: (event: DecisionEvent) => void): () => void;
  /**
   * Replaces the policies of the running limiter: limits, rates, algorithms, fail modes,
   * shadow. Validated as `createLimiter` does: a bad policy throws `PolicyError` and the
   * limiter keeps its policies. The next check uses the new set (checks already under way
   * finish under the old one); the state in the store stays and is read under the new limits
   * (see docs/policy-changes.md), the deny cache starts empty, and the local fallback is
   * present exactly when a new policy fails `local`.
   */
  updatePolicies(policies: readonly PolicyInput[]): void;
}

/**
 * Builds a limiter. Policies are validated here (a bad one throws `PolicyError`), options too
 * (a bad one throws `TypeError` naming it); nothing fails later on the request path.
 */
export function createLimiter(options: LimiterOptions): Limiter {
  const resolved = resolveLimiterOptions(options);
  const policies = definePolicies(options.policies);
  const store: Store = options.store ?? new MemoryStore({ clock: resolved.clock });
  const breaker =
    resolved.breaker === undefined
      ? undefined
      : new CircuitBreaker(resolved.breaker.failureThreshold, resolved.breaker.cooldownMs, resolved.clock);
  const counters = new LimiterCounters(
    resolved.timeoutMs / 1000,
    () => (store as { scriptStats?: ScriptStats }).scriptStats,
  );
  const storeCall = new StoreCall(store, resolved.timeoutMs, breaker, counters.store);
  let steps = composeSteps(storeCall, policies, resolved, counters);
  const listeners = new Set<(event: DecisionEvent) => void>();
  if (options.onDecision) listeners.add(options.onDecision);
  // One for the limiter's life: a decision made before `updatePolicies` can still be settled.
  const reservations = new Reservations(resolved.clock, () => steps);
  const partsOf = (set: readonly CompiledPolicy[]): LimiterParts => ({
    policies: set,
    byName: new Map(set.map((p) => [p.name, p] as const)),
    prefix: resolved.prefix,
    steps,
    idempotencyTtlMs: resolved.idempotencyTtlMs,
    listeners,
    reservations,
    storeKind: store.kind,
  });
  // Replaced whole by updatePolicies (steps too): a check reads it once, so it runs under one set.
  let parts = partsOf(policies);

  return {
    get policies(): readonly CompiledPolicy[] {
      return parts.policies;
    },
    prefix: resolved.prefix,
    get breakerState(): BreakerState {
      return breaker?.state ?? 'closed';
    },
    get liveEvictions(): number {
      const fromStore = (store as { liveEvictions?: unknown }).liveEvictions;
      return (typeof fromStore === 'number' ? fromStore : 0) + (steps.fallback?.liveEvictions ?? 0);
    },
    counters,
    policy: (name: string) => policyNamed(parts, name),
    check: (descriptor: Descriptor): Promise<Decision> => check(parts, descriptor),
    peek: (descriptor: Descriptor): Promise<Decision> => peek(parts, descriptor),
    reset: (identity: IdentityInput, policy?: string, route?: string): Promise<void> =>
      reset(parts, identity, policy, route),
    updatePolicies(inputs: readonly PolicyInput[]): void {
      const next = definePolicies(inputs);
      // The deny cache is made anew: a denial remembered under the old limits must not
      // outlive them. The breaker and the local fallback's in-process state carry on.
      steps = composeSteps(storeCall, next, resolved, counters, steps);
      parts = partsOf(next);
    },
    settle: (decision: Decision, units: SettleUnits): Promise<SettleAnswer> =>
      reservations.settle(decision, units),
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
