/**
 * The shape every algorithm shares. Each algorithm is a pure function of its stored
 * state, the time and the policy numbers; it mirrors one file in lua/ operation for
 * operation, so MemoryStore and the Redis decide script give identical answers.
 */

/** The policy numbers an algorithm reads (see `CompiledPolicy`) plus the cost. */
export interface AlgorithmParams {
  /** Quota: units per window, or bucket capacity (token bucket, GCRA). */
  readonly limit: number;
  /** Window length in ms (window algorithms). */
  readonly windowMs: number;
  /** Ms to earn back one unit (token bucket, GCRA). */
  readonly intervalMs: number;
  /** Units to charge, > 0. */
  readonly cost: number;
  /** Concurrency: the slot a charge takes (`StoreEntry.slotId`). */
  readonly slotId?: string;
}

/** One algorithm's answer for one key, before the all-or-nothing step decides to charge. */
export interface Evaluation<S> {
  /** This entry alone would admit `cost`. */
  readonly allowed: boolean;
  /** Whole units left now (nothing charged). */
  readonly remaining: number;
  /** Ms until the quota is fully restored, nothing charged. */
  readonly resetMs: number;
  /** Ms until `cost` could be admitted: 0 when allowed, -1 when never (cost > limit). */
  readonly retryAfterMs: number;
  /** Whole units left if charged. */
  readonly chargedRemaining: number;
  /** Ms until the quota is fully restored if charged. */
  readonly chargedResetMs: number;
  /** Concurrency: the expired slots a consuming check removes (reclaims). */
  readonly reclaimedSlots?: number;
  /** The state to store if charged. */
  charge(): S;
}

/** An algorithm: `state` is undefined for a fresh (or expired) key. */
export type AlgorithmFn<S> = (state: S | undefined, nowMs: number, params: AlgorithmParams) => Evaluation<S>;

/** Slack for comparisons against a quota (units); see lua/common.lua. */
export const EPS = 1e-9;

/** Whole units: floor with EPS slack, clamped to [0, floor(limit)] (lua/common.lua `whole`). */
export function whole(x: number, limit: number): number {
  const r = Math.floor(x + EPS);
  if (r < 0) return 0;
  const most = Math.floor(limit);
  if (r > most) return most;
  return r;
}

/** The policy numbers a settle reads, what it changes, and when the reservation was charged. */
export interface SettleParams {
  /** Quota: units per window, or bucket capacity (token bucket, GCRA). */
  readonly limit: number;
  /** Window length in ms (window algorithms). */
  readonly windowMs: number;
  /** Ms to earn back one unit (token bucket, GCRA). */
  readonly intervalMs: number;
  /** Units to charge (> 0) or to refund (< 0): the actual cost minus the reserved one; never 0. */
  readonly deltaUnits: number;
  /**
   * The earliest the reservation can have been charged, in ms by the store's clock (the check was
   * asked then): window algorithms find its window by it, buckets count the refill since it.
   */
  readonly reservedAtMs: number;
  /**
   * The latest the reservation can have been charged (the check's answer came back then), at or
   * after `reservedAtMs`: a sliding log finds the reservation's record at or before it.
   */
  readonly reservedByMs: number;
  /** The units the check charged (> 0): a refund is at most this. */
  readonly reservedUnits: number;
  /**
   * The check reserved a future turn this many ms after it was charged (its verdict's `waitMs`);
   * unset or 0: none. A bucket counts no refill before the turn: until then it was in debt.
   */
  readonly waitMs?: number;
}

/** A settle's new state, and how long it must be kept (ms from now, before the TTL's +1). */
export interface Settlement<S> {
  readonly state: S;
  readonly keepMs: number;
}

/**
 * A settle of a live state: the state with `deltaUnits` charged (capped at a debt of one
 * `limit`) or refunded (never above capacity), or undefined when the reservation is no longer
 * there to settle (its window is over). The store calls it only for a key that exists.
 */
export type SettleFn<S> = (state: S, nowMs: number, params: SettleParams) => Settlement<S> | undefined;

/** The most units an algorithm holds after a settle's charge: a debt of one limit, or what it already held. */
export function settleCeiling(held: number, limit: number): number {
  return Math.max(held, 2 * limit);
}

/**
 * A bucket's (token bucket, GCRA) `deltaUnits` to settle: a charge as it is; a refund cut to at
 * most the reservation less what the policy earned back from `reservedAtMs` (plus the reserved
 * turn's `waitMs`: until its turn a reservation holds the bucket in debt, earning nothing back
 * toward full) to `latestMs` (the latest time the state saw: time gone backwards earns nothing
 * back; a debt's end, the turn of the last reservation). Had the reservation never
 * been made, the bucket would hold no more than that much more now: the refill since may have
 * filled it (a full key expires and comes back fresh, then drained by others), and a refund of
 * that refill would add capacity the policy never had; a turn reserved after this one keeps its
 * place, so a cancelled turn gives back only what no later turn stands on. A reserved turn lies
 * between `reservedAtMs` and `reservedByMs`, plus its wait (the caller's clock is not the store's:
 * a round trip and whole ms apart): a debt's end within that is the turn itself, the last one
 * reserved, and it gives all back (counted from `reservedAtMs` instead, each cancel of a queue, the
 * last turn first, would leave its shortfall to the next, doubling it). 0: nothing left to refund.
 * Same arithmetic as `bucket_delta` in lua/common.lua.
 */
export function bucketDelta(
  deltaUnits: number,
  latestMs: number,
  { intervalMs, reservedAtMs, reservedByMs, reservedUnits, waitMs = 0 }: SettleParams,
): number {
  if (deltaUnits >= 0) return deltaUnits;
  let most = reservedUnits;
  const turnMs = reservedAtMs + waitMs;
  if (waitMs > 0 && latestMs <= reservedByMs + waitMs) most = reservedUnits;
  else if (latestMs > turnMs) most = reservedUnits - (latestMs - turnMs) / intervalMs;
  if (most <= 0) return 0;
  return Math.max(deltaUnits, -most);
}

/**
 * A wait's fraction of a ms that is floating-point noise, not time (1 ns): lua/common.lua's
 * WAIT_NOISE_MS.
 */
const WAIT_NOISE_MS = 1e-6;

/**
 * A wait in whole ms as a store tells it: rounded up past the noise (497.00000000000006 is 497),
 * so a told wait never counts down faster than the clock; `+ 0`: never -0. As lua/decide.lua.
 */
export function wholeWaitMs(waitMs: number): number {
  return Math.ceil(waitMs - WAIT_NOISE_MS) + 0;
}

/**
 * Waiting: the wait of an entry that denies now (`evaluation`) but reserves its future turn, in
 * whole ms (at least 1), or 0 when it does not: it allows now, it can never admit (-1), or its turn
 * (the wait it is told, rounded up) lies beyond `maxWaitMs` (unset: no waiting). The store checks
 * bans first (a banned entry never waits). Same rule as `reserved_wait` in lua/decide.lua.
 */
export function reservedWaitMs(evaluation: Evaluation<unknown>, maxWaitMs: number | undefined): number {
  if (evaluation.allowed || maxWaitMs === undefined || !(evaluation.retryAfterMs >= 0)) return 0;
  const waitMs = Math.max(1, wholeWaitMs(evaluation.retryAfterMs));
  return waitMs <= maxWaitMs ? waitMs : 0;
}
