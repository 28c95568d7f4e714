/** The store contract: what the limiter asks a store, what it answers, and the Redis client it may wrap. */

import type { CompiledPolicy } from './policy.js';

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
  /**
   * A concurrency entry (`algorithm: 'concurrency'`) in mode 'consume': the slot this check takes
   * when it is charged, unique per check. Unset for every other entry.
   */
  readonly slotId?: string;
  /**
   * Waiting (token bucket, GCRA; > 0): when this entry would deny now but could admit its cost
   * within `maxWaitMs`, it reserves that turn: allowed, charged now (a bucket goes into debt, GCRA's
   * TAT moves on), and the verdict's `waitMs` says how long until the turn. Unset or 0: no waiting.
   */
  readonly maxWaitMs?: number;
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
  /** An allowed entry that reserved a future turn (`maxWaitMs`): whole ms until it, rounded up (> 0). Absent otherwise. */
  readonly waitMs?: number;
  /** A concurrency entry: the expired slots (their holder died) this call removed, when > 0. Absent otherwise. */
  readonly reclaimedSlots?: number;
}

/** One concurrency slot a check took: its key, its policy and its member. */
export interface SlotRef {
  /** The concurrency entry's storage key. */
  readonly key: string;
  readonly policy: CompiledPolicy;
  /** The entry's `slotId`. */
  readonly slotId: string;
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
  /**
   * The entry's verdict `waitMs` when the check reserved a future turn (waiting): the store counts
   * no refill before that turn, so a cancel (`actualUnits: 0` before the turn) gives back every
   * reserved unit no later turn stands on. Unset or 0: no turn was reserved.
   */
  readonly waitMs?: number;
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
  /**
   * Optional (a store that holds concurrency slots): frees `slots`. Idempotent: a slot not held is
   * left alone. Resolves one flag per slot: true where it was held.
   */
  releaseSlots?(slots: readonly SlotRef[]): Promise<boolean[]>;
  /** Optional: `releaseSlots`, answered synchronously (an in-process store). */
  releaseSlotsSync?(slots: readonly SlotRef[]): boolean[];
  /**
   * Optional (with `releaseSlots`): renews `slots` to the store's now plus their policy's lease
   * (`windowMs`), only where still held: a slot that expired or was freed is never taken again.
   * Resolves one flag per slot: false where it was lost.
   */
  renewSlots?(slots: readonly SlotRef[]): Promise<boolean[]>;
  /** Optional: `renewSlots`, answered synchronously (an in-process store). */
  renewSlotsSync?(slots: readonly SlotRef[]): boolean[];
}

/**
 * The few Redis client methods Sluice calls. ioredis `Redis` and `Cluster` fit as they are;
 * any other client (node-redis, an HTTP client) can be wrapped in these two methods.
 */
export interface EvalClient {
  evalsha(sha1: string, numKeys: number, ...args: (string | number)[]): Promise<unknown>;
  eval(script: string, numKeys: number, ...args: (string | number)[]): Promise<unknown>;
}
