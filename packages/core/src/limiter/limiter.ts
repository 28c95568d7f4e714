/** What a configured limiter offers: the `Limiter` interface and the units a settle takes. */

import type {
  CompiledPolicy,
  Decision,
  DecisionEvent,
  Descriptor,
  IdentityInput,
  PolicyInput,
  SlotLostEvent,
  StoreEntry,
} from '../types.js';
import type { LimiterCounters } from './counters.js';
import type { SettleAnswer } from './store-answer.js';
import type { BreakerState } from './store-call.js';

/** The actual units of a request: one number for every policy, or a number per policy name. */
export type SettleUnits = number | Readonly<Record<string, number>>;

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
   * Decides entries the caller planned itself (a service that maps its own requests to keys and
   * policies, such as `@sluice/server`): every entry in ONE atomic store call, all or nothing as
   * `check` (`mode: 'consume'`, the default), or a look that charges nothing (`'peek'`). The
   * limiter's store call applies (breaker, deadline, store counts), then the local fallback and
   * each entry's fail mode, and the decision is traced and (consume) emitted as `check`'s is;
   * `decision.results` are in entry order. The policies are the caller's (compiled by
   * `definePolicy`, any name; not the limiter's set), the keys too (one hash tag for all on Redis
   * Cluster); no local stage, deny cache, lease, wait or request record. A cost above a policy's
   * limit is denied by the store, not refused. Never rejects because of the store; rejects with a
   * TypeError naming the entry and field for a key that is not a non-empty string, a policy not
   * compiled or needing an in-process step (concurrency, lease, local stage), or a cost that is
   * not positive and finite (whole for window algorithms).
   */
  checkEntries(
    entries: readonly Pick<StoreEntry, 'key' | 'policy' | 'cost'>[],
    mode?: 'consume' | 'peek',
  ): Promise<Decision>;
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
  /**
   * Frees the concurrency slots `decision` holds (its check took them: `algorithm: 'concurrency'`),
   * once: later calls, and calls for a decision that holds none, do nothing. Call it when the
   * request ends, however it ends (the adapters do, on the response's end or the client's abort).
   * Never rejects: a slot the store could not free expires after its policy's `leaseMs`.
   */
  release(decision: Decision): Promise<void>;
  /** True while `decision` holds concurrency slots (taken, not yet released). */
  hasSlots(decision: Decision): boolean;
  /**
   * Subscribes a listener to lost slots: a held slot a renewal found gone (its lease ran out, for
   * instance while the process was paused, and the store took it back). The slot is never taken
   * again; the event carries the policy only. Returns an unsubscribe function.
   */
  onSlotLost(listener: (event: SlotLostEvent) => void): () => void;
  /**
   * Shuts the limiter's overload parts down: every check waiting for its turn is cancelled (its
   * units given back, denied), and every held slot is released. Checks may still be made after.
   */
  close(): Promise<void>;
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
