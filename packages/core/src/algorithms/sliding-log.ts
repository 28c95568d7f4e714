import { WINDOW_LIMITS } from './limits.js';
import { defineAlgorithm } from './module.js';
import { type AlgorithmFn, type SettleFn, settleCeiling, whole } from './types.js';

/**
 * Sliding log state, mirroring the string lua/sliding-log.lua keeps: one record per
 * admitted request (requests admitted at the same time share one), oldest first. Expired
 * records stay in front until a charge finds them as many as the live ones.
 */
export interface SlidingLogState {
  /** Units admitted before the first record. */
  readonly base: number;
  /** Admission time of each record in whole microseconds, ascending. */
  readonly times: readonly number[];
  /** Units admitted up to and including each record (cumulative, ascending). */
  readonly cums: readonly number[];
}

/** Cumulative units are rebased to 0 before they reach this, so they stay exact (lua/sliding-log.lua). */
export const LOG_CUM_MAX = 1e15;

/**
 * Largest sliding-log `limit` (units per window) a policy may have. A sliding log keeps one
 * record per admitted request (up to twice `limit` records while expired ones wait for a
 * rewrite), and each decision reads the whole log from Redis, so its Redis time grows with
 * the limit: measured per decision (Redis 7.0.15, INFO commandstats) about 30 µs at 100
 * records, 80 at 1000, 600 at 10 000 and 12 000 at 100 000, where a token bucket takes
 * about 12-25. At this cap a decision reads at most about 1000 records. Larger quotas:
 * `sliding-window` (constant cost, an estimate instead of an exact log).
 */
export const SLIDING_LOG_MAX_LIMIT = 500;

/** Index of the first time greater than `bound` at or after `from` (times ascending). */
function firstAbove(times: readonly number[], bound: number, from: number): number {
  let lo = from;
  let hi = times.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((times[mid] as number) > bound) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

/**
 * Sliding log: exact rolling window over the admitted requests (cost must be a whole
 * number). Same arithmetic, and the same records kept, as lua/sliding-log.lua.
 */
const evaluate: AlgorithmFn<SlidingLogState> = (state, now, { limit, windowMs, cost }) => {
  const base = state?.base ?? 0;
  const times = state?.times ?? [];
  const cums = state?.cums ?? [];
  const n = times.length;
  // Times in whole microseconds: Redis TIME's resolution, so exact in production. Times to
  // come are differences of whole microseconds (+ windowMs), as in lua/sliding-log.lua.
  const nowUs = Math.floor(now * 1000 + 0.5);
  const sinceUs = nowUs - windowMs * 1000;
  const first = n === 0 || (times[0] as number) > sinceUs ? 0 : firstAbove(times, sinceUs, 1);
  const cum = n > 0 ? (cums[n - 1] as number) : base;
  const before = first > 0 ? (cums[first - 1] as number) : base;
  const live = cum - before;
  const newest = first < n ? (times[n - 1] as number) : undefined;

  const allowed = live + cost <= limit;
  let retryAfterMs = 0;
  if (!allowed) {
    if (cost > limit) {
      retryAfterMs = -1;
    } else {
      // The record holding the k-th oldest live unit: once it leaves, cost fits.
      const k = live + cost - limit;
      let lo = first;
      let hi = n - 1;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if ((cums[mid] as number) - before >= k) {
          hi = mid;
        } else {
          lo = mid + 1;
        }
      }
      retryAfterMs = ((times[lo] as number) - nowUs) / 1000 + windowMs;
    }
  }

  // A charge is stamped max(now, newest live record), so the records stay in order.
  const stamp = newest !== undefined && newest > nowUs ? newest : nowUs;
  return {
    allowed,
    remaining: whole(limit - live, limit),
    resetMs: newest !== undefined ? (newest - nowUs) / 1000 + windowMs : 0,
    retryAfterMs,
    chargedRemaining: whole(limit - (live + cost), limit),
    chargedResetMs: (stamp - nowUs) / 1000 + windowMs,
    charge: () => {
      // Merged into the newest record when stamped alike. In place, the expired records stay
      // in front; once they are as many as the live ones (or the units near LOG_CUM_MAX) the
      // log is rewritten without them, rebased near LOG_CUM_MAX.
      const last = newest === stamp ? n - 1 : n;
      const total = cum + cost;
      const rebase = total < LOG_CUM_MAX ? 0 : before;
      const inPlace = total < LOG_CUM_MAX && first < n - first;
      const from = inPlace ? 0 : first;
      const nextTimes = times.slice(from, last);
      const nextCums = cums.slice(from, last);
      if (rebase !== 0)
        for (let i = 0; i < nextCums.length; i++) nextCums[i] = (nextCums[i] as number) - rebase;
      nextTimes.push(stamp);
      nextCums.push(total - rebase);
      return { base: inPlace ? base : before - rebase, times: nextTimes, cums: nextCums };
    },
  };
};

/** A log is kept an eighth of its window beyond its newest unit (lua/sliding-log.lua LOG_TTL_SLICES). */
const LOG_TTL_SLICES = 8;

/**
 * Settles a reservation. A refund takes units off the live records stamped at or before the
 * latest time the reservation can have been charged (`reservedByMs`), newest first: the
 * reservation's own record first, never a record of a request admitted after it (a refund of
 * that would free capacity in windows the reservation is not in: a key expired and drained anew
 * since). Records left empty are dropped; a charge adds a record of the extra units now (merged into the
 * newest when stamped alike), up to a debt of one `limit` beyond it. The log is rewritten with its
 * live records only, counted from 0. Nothing when no live record is left to refund. Same
 * arithmetic as `SETTLES['sliding-log']` in lua/sliding-log.lua.
 */
const settle: SettleFn<SlidingLogState> = (state, now, { limit, windowMs, deltaUnits, reservedByMs }) => {
  const { base, times, cums } = state;
  const n = times.length;
  const nowUs = Math.floor(now * 1000 + 0.5);
  const sinceUs = nowUs - windowMs * 1000;
  const first = n === 0 || (times[0] as number) > sinceUs ? 0 : firstAbove(times, sinceUs, 1);
  const stamps: number[] = [];
  const units: number[] = [];
  let total = 0;
  for (let i = first; i < n; i++) {
    const u = (cums[i] as number) - (i === 0 ? base : (cums[i - 1] as number));
    stamps.push(times[i] as number);
    units.push(u);
    total += u;
  }
  // No live record: the key is as good as expired, nothing to settle.
  if (stamps.length === 0) return undefined;
  if (deltaUnits < 0) {
    let refund = -deltaUnits;
    let taken = 0;
    // The records at or before the reservation, newest first.
    for (let i = firstAbove(stamps, Math.floor(reservedByMs * 1000 + 0.5), 0) - 1; i >= 0; i--) {
      if (refund <= 0) break;
      const held = units[i] as number;
      const take = Math.min(held, refund);
      units[i] = held - take;
      refund -= take;
      taken += take;
    }
    if (taken === 0) return undefined;
  } else {
    const most = settleCeiling(total, limit);
    const extra = total + deltaUnits > most ? most - total : deltaUnits;
    if (extra <= 0) return undefined;
    const last = stamps.length - 1;
    if (last >= 0 && (stamps[last] as number) >= nowUs) {
      units[last] = (units[last] as number) + extra;
    } else {
      stamps.push(nowUs);
      units.push(extra);
    }
  }
  const nextTimes: number[] = [];
  const nextCums: number[] = [];
  let cum = 0;
  for (let i = 0; i < stamps.length; i++) {
    const u = units[i] as number;
    if (u <= 0) continue;
    cum += u;
    nextTimes.push(stamps[i] as number);
    nextCums.push(cum);
  }
  const newest = nextTimes.length > 0 ? (nextTimes[nextTimes.length - 1] as number) : undefined;
  const resetMs = newest === undefined ? 0 : (newest - nowUs) / 1000 + windowMs;
  return {
    state: { base: 0, times: nextTimes, cums: nextCums },
    keepMs: resetMs + Math.ceil(windowMs / LOG_TTL_SLICES),
  };
};

/**
 * The sliding log (lua/sliding-log.lua): an exact rolling window over the admitted requests,
 * whole costs, a limit of at most `SLIDING_LOG_MAX_LIMIT` per policy. MemoryStore keeps the
 * state object as is.
 */
export const slidingLog = defineAlgorithm({
  name: 'sliding-log',
  evaluate,
  settle,
  state: { kind: 'object' },
  limits: {
    ...WINDOW_LIMITS,
    maxLimit: {
      units: SLIDING_LOG_MAX_LIMIT,
      reason: 'each decision reads the whole log from Redis, so its cost grows with the limit',
      instead: 'sliding-window',
    },
  },
  store: { wholeCosts: true, maxLimit: LOG_CUM_MAX },
  windows: { longestWaitWindows: 1, resetsOnBoundary: false },
  lua: {
    file: 'sliding-log.lua',
    resultFields: ['v', 'n', 'first', 'before', 'cum', 'newest', 'stamp', 'cost', 'windowMs'],
  },
});
