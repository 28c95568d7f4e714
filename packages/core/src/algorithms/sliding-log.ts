import { WINDOW_LIMITS } from './limits.js';
import { defineAlgorithm } from './module.js';
import { type AlgorithmFn, whole } from './types.js';

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

/**
 * The sliding log (lua/sliding-log.lua): an exact rolling window over the admitted requests,
 * whole costs, a limit of at most `SLIDING_LOG_MAX_LIMIT` per policy. MemoryStore keeps the
 * state object as is.
 */
export const slidingLog = defineAlgorithm({
  name: 'sliding-log',
  evaluate,
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
