/**
 * The shared vocabulary of Sluice: policies, descriptors, decisions and stores.
 * Everything here is plain data and interfaces; no runtime code, no `node:` imports.
 */

import type { Algorithm } from './algorithms/registry.js';
import type { BanInput, CompiledBan } from './policy/ban.js';
import type { CompiledLease, CompiledLocalStage, LeaseInput, LocalStageInput } from './policy/lease.js';

/** The algorithm a policy uses to decide: a name in the algorithm registry (algorithms/registry.ts). */
export type {
  Algorithm,
  BanInput,
  CompiledBan,
  CompiledLease,
  CompiledLocalStage,
  LeaseInput,
  LocalStageInput,
};

/**
 * What a policy does when the store cannot decide (timeout, connection error, open breaker):
 * - `closed`: deny with 503 (outcome `unavailable`, not `over_limit`).
 * - `open`: admit, counted and reported as `fail_open`.
 * - `local`: decide from an in-process fallback limiter until the store answers again.
 * - `lease`: a leased policy keeps admitting from its current lease until the lease is spent or
 *   expired, then fails as its `lease.failModeAfter` says (default `closed`).
 */
export type FailMode = 'closed' | 'open' | 'local' | 'lease';

/**
 * Why a decision came out the way it did. `forbidden`: the request's client IP or identity is
 * on the adapter's deny list (answered 403; no policy was asked).
 */
export type Outcome = 'allowed' | 'over_limit' | 'unavailable' | 'forbidden';

/** A rate such as `'100/s'`, `'5/10s'` or `{ limit: 100, windowMs: 1000 }`. */
export type RateInput = string | { readonly limit: number; readonly window: string | number };

/** Units charged for one request: a number, or a function of the descriptor. */
export type CostInput = number | ((descriptor: Descriptor) => number);

/**
 * A policy as the application writes it. Validated by `definePolicy` / `createLimiter`;
 * a bad field throws a `PolicyError` naming the field and the value.
 */
export interface PolicyInput {
  /** Unique name; appears in headers, metrics and problem bodies. */
  readonly name: string;
  /** Defaults to `'token-bucket'`. */
  readonly algorithm?: Algorithm;
  /** Units admitted per `window` (window algorithms), or per `window` of refill (token bucket, GCRA). */
  readonly limit?: number;
  /** `'1m'`, `'10s'`, `'500ms'`, `'1h'` or milliseconds. */
  readonly window?: string | number;
  /** Alternative to `limit` + `window`: `'100/s'`, `'5/10s'`. */
  readonly rate?: RateInput;
  /** Bucket capacity for token bucket and GCRA. Defaults to `limit`. */
  readonly burst?: number;
  /** Default cost per request; 1 when unset. */
  readonly cost?: CostInput;
  /** Defaults to `'closed'`. */
  readonly failMode?: FailMode;
  /** Decide and record, never enforce. */
  readonly shadow?: boolean;
  /** `'identity'` (default): one counter per identity. `'route'`: one per identity and route. */
  readonly scope?: 'identity' | 'route';
  /**
   * Ban after a denial: once this policy denies a request, that identity is denied by this
   * policy for `blockMs`, on every instance (the ban lives in the store next to the policy's
   * state). Unset: no ban.
   */
  readonly ban?: BanInput;
  /**
   * Lease units to each instance: `{ units: 10, ttlMs: '1s' }` takes 10 units from the store in
   * one call and admits from them in-process (decision source `lease`); never more admitted
   * than the policy allows, at most instances x units unused. Unset: one store call per check.
   */
  readonly lease?: LeaseInput;
  /**
   * An in-process bucket per key in front of the store, `{ burst: 20, rate: '10/s' }`: a request
   * it turns away never reaches the store (decision source `local-stage`). Unset: none.
   */
  readonly local?: LocalStageInput;
}

/** A validated policy in the units the algorithms use. Built once, at construction. */
export interface CompiledPolicy {
  readonly name: string;
  readonly algorithm: Algorithm;
  /**
   * The quota: units admitted per window (window algorithms) or the bucket capacity
   * (token bucket, GCRA). This is `q` in `RateLimit-Policy`.
   */
  readonly limit: number;
  /**
   * Window length (window algorithms), or the time to refill from empty to full
   * (token bucket, GCRA: `limit * intervalMs`). This is `w` in `RateLimit-Policy`.
   */
  readonly windowMs: number;
  /** Milliseconds to earn back one unit (token bucket, GCRA); `windowMs / limit` otherwise. */
  readonly intervalMs: number;
  readonly cost: CostInput;
  readonly failMode: FailMode;
  readonly shadow: boolean;
  readonly scope: 'identity' | 'route';
  /** The ban after a denial; absent for a policy without one. */
  readonly ban?: CompiledBan;
  /** The lease; absent for a policy without one. */
  readonly lease?: CompiledLease;
  /** The local stage; absent for a policy without one. */
  readonly local?: CompiledLocalStage;
}

/**
 * Where an identity came from. Each kind is its own namespace: no value of one kind ever
 * shares state with a value of another (an API key spelled `127.0.0.1` is not the client
 * 127.0.0.1).
 * - `ip`: the client address, as the adapters derive it (IPv6 grouped by prefix);
 * - `key`: a credential the request carries, such as an API key header;
 * - `app`: the application's own id (a tenant, a user): what a plain string means.
 */
export type IdentityKind = 'ip' | 'key' | 'app';

/** An identity with its kind: `{ kind: 'key', value: apiKey }`. */
export interface Identity {
  readonly kind: IdentityKind;
  readonly value: string;
}

/** An `Identity`, or a string: an identity of kind `app`. */
export type IdentityInput = string | Identity;

/** What an adapter knows about one request, built from trusted request data. */
export interface Descriptor {
  /**
   * Who is limited: a string (kind `app`: a tenant, a user) or an `Identity` with its kind
   * (`{ kind: 'key', value: apiKey }`, `{ kind: 'ip', value: ipIdentity(address) }`).
   * Never logged or returned.
   */
  readonly identity: IdentityInput;
  /** Normalized route, method first: `POST /transfers/:id`. */
  readonly route?: string;
  /**
   * Units to charge. A number applies to every policy; a record sets it per policy name.
   * Where unset for a policy, the policy's own `cost` applies (default 1).
   */
  readonly cost?: number | Readonly<Record<string, number>>;
  /** Names of the limiter's policies that apply to this request; all when unset. */
  readonly policies?: readonly string[];
  /**
   * Optional idempotency key (a request id): a retried check with the same key returns
   * the first decision instead of charging twice.
   */
  readonly requestId?: string;
  /**
   * Keep this check's charge as a reservation that `limiter.settle(decision, units)` can settle to
   * the actual cost once the handler ran (the cost charged now is the estimate). Unset: the
   * decision cannot be settled (a settle of it does nothing).
   */
  readonly reserve?: boolean;
}

/**
 * Where a decision was made. `deny-list`: the adapter's deny list, before any policy. `lease`:
 * in-process from leases taken before (no store call). `local-stage`: a policy's local stage
 * turned the request away (no store call).
 */
export type DecisionSource =
  | 'store'
  | 'deny-cache'
  | 'local'
  | 'fail-open'
  | 'fail-closed'
  | 'deny-list'
  | 'lease'
  | 'local-stage';

/** The verdict for one policy. */
export interface PolicyResult {
  readonly policy: string;
  readonly algorithm: Algorithm;
  /** This policy admits the request (before shadow is applied). */
  readonly allowed: boolean;
  readonly outcome: Outcome;
  readonly limit: number;
  readonly windowMs: number;
  /** Whole units left after this decision, between 0 and `limit`. */
  readonly remaining: number;
  /** Milliseconds until the quota is fully restored. */
  readonly resetMs: number;
  /** Milliseconds until this request's cost could be admitted; 0 when allowed. */
  readonly retryAfterMs: number;
  readonly cost: number;
  readonly shadow: boolean;
  readonly failMode: FailMode;
  /**
   * True when this policy denied because the identity is banned (`policy.ban`): by an earlier
   * denial, or by this one, which started the ban. `retryAfterMs` is then the rest of the block.
   * Absent otherwise.
   */
  readonly banned?: true;
}

/** The answer to `limiter.check()`. */
export interface Decision {
  /** Let the request through (shadow denies and `open` failures are allowed). */
  readonly allowed: boolean;
  readonly outcome: Outcome;
  /**
   * The policy that decided: when denied, the denying policy with the longest wait;
   * when allowed, the one with the fewest units remaining. Undefined when none applied.
   */
  readonly policy: string | undefined;
  readonly limit: number;
  readonly remaining: number;
  readonly resetMs: number;
  readonly retryAfterMs: number;
  /** A shadow policy would have denied this request. */
  readonly shadowed: boolean;
  readonly source: DecisionSource;
  /** One entry per policy that applied, in the limiter's policy order. */
  readonly results: readonly PolicyResult[];
}

/** One policy's part of an atomic store call. */
export interface StoreEntry {
  /** The full storage key (`<prefix>:{<kind><identity>}:<policy>`). */
  readonly key: string;
  readonly policy: CompiledPolicy;
  /** Resolved cost, > 0. */
  readonly cost: number;
  /**
   * A lease take: charge `cost`, or when less is left as much as is left down to `leastCost`
   * (0 < leastCost <= cost); the verdict's `chargedUnits` says what was charged. Unset: `cost`.
   */
  readonly leastCost?: number;
}

/** The store's raw verdict for one entry. */
export interface StoreVerdict {
  readonly allowed: boolean;
  /** Whole units left (after the charge when one was made). */
  readonly remaining: number;
  /** Whole milliseconds until the quota is fully restored, rounded up. */
  readonly resetMs: number;
  /** Whole milliseconds until the cost could be admitted, rounded up; 0 when allowed, -1 when never. */
  readonly retryAfterMs: number;
  /** Denied because the identity is banned under this entry's policy (`policy.ban`); absent otherwise. */
  readonly banned?: true;
  /** For an entry with `leastCost`: the units charged (0 when none were); absent otherwise. */
  readonly chargedUnits?: number;
}

/**
 * Options of one store check. `requestKey` + `requestTtlMs` make a consuming check
 * idempotent: while the record lives, a check with the same key replays the first
 * verdicts and charges nothing. Peek ignores them.
 */
export interface StoreCheckOptions {
  /** Storage key of the request record; shares the entries' hash tag. */
  readonly requestKey?: string;
  /** How long the record lives, in ms. Goes with `requestKey`. */
  readonly requestTtlMs?: number;
}

/**
 * One policy's part of a settle: the actual cost of a request whose check reserved (charged)
 * `reservedUnits` for this entry. See `Store.settle`.
 */
export interface StoreSettleEntry {
  /** The entry's storage key, as the check used it. */
  readonly key: string;
  readonly policy: CompiledPolicy;
  /** Units the check charged for this entry (its cost), > 0. */
  readonly reservedUnits: number;
  /** Units the request really used, >= 0 (a whole number for sliding-log). */
  readonly actualUnits: number;
  /**
   * Ms since the check that charged the reservation was asked (>= 0), by the limiter's clock: the
   * store puts the reservation at its own now minus this at the earliest (to find the window it
   * was charged in, and the refill since it).
   */
  readonly reservedAgoMs: number;
  /**
   * Ms since that check's answer came back (0 to `reservedAgoMs`): the reservation was charged at
   * the store's now minus this at the latest (a sliding log refunds only records up to then).
   * Unset: `reservedAgoMs` (a store that decided at once).
   */
  readonly answeredAgoMs?: number;
}

/** What the store is asked to do. */
export type StoreMode = 'consume' | 'peek';

/**
 * Where state lives. `decide` decides every entry in ONE atomic step: the enforced entries
 * are charged when every enforced entry allows, the shadow entries (`policy.shadow`) when
 * every entry allows. So an enforced deny charges nothing; a deny of shadow entries only
 * charges the enforced ones. Verdicts come back in entry order.
 */
export interface Store {
  readonly kind: string;
  decide(
    entries: readonly StoreEntry[],
    mode: StoreMode,
    options?: StoreCheckOptions,
  ): Promise<StoreVerdict[]>;
  /**
   * Optional: the same decision, answered synchronously. A store that decides in-process
   * (`MemoryStore`) implements it; the limiter then calls it instead of `decide`, with no
   * deadline (it cannot be late) and no promise per call. A throw counts as a store failure.
   */
  decideSync?(entries: readonly StoreEntry[], mode: StoreMode, options?: StoreCheckOptions): StoreVerdict[];
  /** Delete the state behind these keys. */
  reset(keys: readonly string[]): Promise<void>;
  /**
   * Optional: settles a reservation, every entry in ONE atomic step: `actualUnits -
   * reservedUnits` charged (a charge above the reservation is charged in full, up to a debt of
   * one limit: later checks wait until it is repaid) or refunded (at most what was reserved,
   * never above the capacity; a bucket's refund less what it earned back since the reservation,
   * a sliding log's only from the records up to the reservation). A key that no longer exists is
   * left alone (never recreated), and so is a reservation whose window is over (fixed window: the
   * reservation's window only; sliding window: that window's count). Resolves with one flag per entry: true where settled.
   * Not idempotent by itself: the limiter settles a decision once.
   */
  settle?(entries: readonly StoreSettleEntry[]): Promise<boolean[]>;
  /** Optional: `settle`, answered synchronously (an in-process store). */
  settleSync?(entries: readonly StoreSettleEntry[]): boolean[];
}

/** Emitted once per decision. Carries no identity, key or route. */
export interface DecisionEvent {
  readonly policy: string | undefined;
  readonly outcome: Outcome;
  /**
   * Per policy, the metric outcome (`allowed`, `over_limit`, `shadow_over_limit`, `fail_open`,
   * `fail_closed`) and whether it was near its limit: admitted with at most a fifth of the limit
   * remaining (`sluice_near_limit_total`, as Envoy's rate limit service counts near_limit).
   */
  readonly metricOutcomes: readonly {
    readonly policy: string;
    readonly outcome: MetricOutcome;
    readonly nearLimit?: true;
  }[];
  readonly allowed: boolean;
  readonly shadowed: boolean;
  readonly source: DecisionSource;
  readonly durationMs: number;
}

/** Outcome labels of `sluice_decisions_total`. */
export type MetricOutcome = 'allowed' | 'over_limit' | 'shadow_over_limit' | 'fail_open' | 'fail_closed';

/**
 * The few Redis client methods Sluice calls. ioredis `Redis` and `Cluster` fit as they are;
 * any other client (node-redis, an HTTP client) can be wrapped in these two methods.
 */
export interface EvalClient {
  evalsha(sha1: string, numKeys: number, ...args: (string | number)[]): Promise<unknown>;
  eval(script: string, numKeys: number, ...args: (string | number)[]): Promise<unknown>;
}

/** Milliseconds since the epoch. Injected in tests; `Date.now` otherwise. */
export type Clock = () => number;
