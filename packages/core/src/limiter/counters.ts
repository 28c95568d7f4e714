/**
 * What a limiter counts for its metrics, beside its decisions: store calls and their failures by
 * cause, store call latency, lease units, remembered denials. Plain numbers bumped on the request
 * path and read when metrics are rendered; no label holds an identity, a key or a path.
 */

import type { StoreEntry } from '../types.js';
import type { UnavailableCause } from './store-answer.js';

/** Why a store call failed, as the `cause` label of `sluice_store_errors_total` writes it. */
export type StoreErrorCause = 'timeout' | 'error' | 'breaker_open' | 'noscript_reload';

/** Every `cause` label value, in the order rendered. `noscript_reload` was recovered (EVAL). */
export const STORE_ERROR_CAUSES: readonly StoreErrorCause[] = Object.freeze([
  'timeout',
  'error',
  'breaker_open',
  'noscript_reload',
]);

/** The label of a store layer's unavailable cause (a wrong verdict count is an `error`). */
export function storeErrorCauseOf(cause: UnavailableCause): Exclude<StoreErrorCause, 'noscript_reload'> {
  if (cause === 'timeout') return 'timeout';
  if (cause === 'breaker-open') return 'breaker_open';
  return 'error';
}

/** Store call latency bucket upper bounds, in seconds: 0.5 ms to 1 s (the decision histogram's too). */
export const DEFAULT_DURATION_BUCKETS_SECONDS: readonly number[] = Object.freeze([
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
]);

/** A cumulative histogram of seconds: per-bucket counts (each `<= bound`), a count and a sum. */
export class SecondsHistogram {
  readonly bucketCounts: number[];
  count = 0;
  sumSeconds = 0;

  /** @param bounds ascending bucket upper bounds in seconds */
  constructor(readonly bounds: readonly number[]) {
    this.bucketCounts = new Array<number>(bounds.length).fill(0);
  }

  /** Counts one observation (a negative or non-finite one as 0). */
  observe(seconds: number): void {
    const s = Number.isFinite(seconds) && seconds > 0 ? seconds : 0;
    this.count++;
    this.sumSeconds += s;
    const { bounds, bucketCounts } = this;
    for (let i = bounds.length - 1; i >= 0 && s <= (bounds[i] as number); i--) bucketCounts[i]!++;
  }
}

/** Store calls the limiter made (through its breaker), failures by cause and latency. */
export class StoreCallCounts {
  /** Calls made, including the ones an open breaker answered without reaching the store. */
  calls = 0;
  /** Failed calls by cause (`noscript_reload` comes from the store itself, see `ScriptStats`). */
  readonly errors: Record<Exclude<StoreErrorCause, 'noscript_reload'>, number> = {
    timeout: 0,
    error: 0,
    breaker_open: 0,
  };
  /** Latency of the calls that reached the store (an in-process store is not timed). */
  readonly durations = new SecondsHistogram(DEFAULT_DURATION_BUCKETS_SECONDS);
  /**
   * Whether calls are timed: set once metrics read these counts (`createMetrics` attaching the
   * limiter), so a limiter nobody measures reads no clock per call.
   */
  timed = false;
}

/** Lease units, summed over every leased policy. */
export class LeaseUnitCounts {
  /** Units the store granted to takes. */
  taken = 0;
  /** Units admitted requests spent from leases (the request that took a lease included). */
  spent = 0;
  /** Units given up unspent: an expired lease replaced, a lease evicted or reset. */
  dropped = 0;
}

/** Where a denial was remembered in-process: the deny cache, or a lease take the store denied. */
export type RememberedDenialSource = 'deny-cache' | 'lease';

/** Every `source` label value of `sluice_remembered_denials_total`. */
export const REMEMBERED_DENIAL_SOURCES: readonly RememberedDenialSource[] = Object.freeze([
  'deny-cache',
  'lease',
]);

/** A Redis store's script counters (`RedisStore.scriptStats`). */
export interface ScriptStats {
  /** Calls of the decide script. */
  readonly calls: number;
  /** Decisions those calls carried (batched checks). */
  readonly decisions: number;
  /** NOSCRIPT replies answered by sending the script again (EVAL). */
  readonly noscriptReloads: number;
}

/**
 * Concurrency slots and waiting requests of one limiter, by policy name: numbers only, no
 * identity or key. `held` and `waiting` are gauges (this process, now); the others count up.
 */
export class OverloadCounts {
  /** Slots this process holds now (taken, not yet released nor lost). */
  readonly held = new Map<string, number>();
  /** Expired slots (their holder died) the store removed while deciding this process's checks. */
  readonly reclaimed = new Map<string, number>();
  /** Slots this process held that a renewal found gone (expired and taken back): never re-taken. */
  readonly lost = new Map<string, number>();
  /** Checks of this process waiting for their turn now, by the policy whose turn is latest. */
  readonly waiting = new Map<string, number>();
  /** Checks that waited and were admitted at their turn. */
  readonly admittedAfterWait = new Map<string, number>();
  /** Checks whose wait was cancelled (signal, `limiter.close()`): their units were given back. */
  readonly cancelledWaits = new Map<string, number>();

  /** Adds `by` (may be negative) to `policy`'s count in `counts`. */
  static add(counts: Map<string, number>, policy: string, by: number): void {
    counts.set(policy, (counts.get(policy) ?? 0) + by);
  }
}

/** Everything a limiter counts beside its decisions; one per limiter, kept across policy updates. */
export class LimiterCounters {
  readonly store = new StoreCallCounts();
  /** Concurrency slots and waiting requests, by policy. */
  readonly overload = new OverloadCounts();
  readonly leases = new LeaseUnitCounts();
  readonly remembered: Record<RememberedDenialSource, number> = { 'deny-cache': 0, lease: 0 };

  /**
   * @param timeoutSeconds the deadline of every store call
   * @param scriptStats reads the store's script counters; undefined for a store without scripts
   */
  constructor(
    readonly timeoutSeconds: number,
    readonly scriptStats: () => ScriptStats | undefined,
  ) {}
}

/** Counts a take's outcome: units granted, the request's own spent, units dropped, or a denial remembered. */
export function countTake(
  counters: LimiterCounters,
  entry: StoreEntry,
  granted: number,
  dropped: number,
  remembered: boolean,
): void {
  counters.leases.dropped += dropped;
  if (granted > 0) {
    counters.leases.taken += granted;
    counters.leases.spent += entry.cost;
  } else if (remembered) counters.remembered.lease++;
}
