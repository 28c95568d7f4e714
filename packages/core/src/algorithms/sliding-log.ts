import { type AlgorithmFn, whole } from './types.js';

/** Sliding log state: admission times (ms) of admitted units, ascending. Mirrors lua/sliding-log.lua. */
export interface SlidingLogState {
  readonly scores: readonly number[];
}

/** Index of the first score greater than `bound` (scores ascending). */
function firstAbove(scores: readonly number[], bound: number): number {
  let lo = 0;
  let hi = scores.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((scores[mid] as number) > bound) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

/**
 * Sliding log: exact rolling window; one entry per admitted unit (cost must be a whole
 * number). Same arithmetic as lua/sliding-log.lua.
 */
export const slidingLog: AlgorithmFn<SlidingLogState> = (state, now, { limit, windowMs, cost }) => {
  const scores = state?.scores ?? [];
  const since = now - windowMs;
  const first = firstAbove(scores, since);
  const live = scores.length - first;
  const newest = live > 0 ? (scores[scores.length - 1] as number) : undefined;

  const allowed = live + cost <= limit;
  let retryAfterMs = 0;
  if (!allowed) {
    if (cost > limit) {
      retryAfterMs = -1;
    } else {
      const k = live + cost - limit;
      retryAfterMs = (scores[first + k - 1] as number) + windowMs - now;
    }
  }

  let newest2 = now;
  if (newest !== undefined && newest > now) newest2 = newest;
  return {
    allowed,
    remaining: whole(limit - live, limit),
    resetMs: newest !== undefined ? newest + windowMs - now : 0,
    retryAfterMs,
    chargedRemaining: whole(limit - (live + cost), limit),
    chargedResetMs: newest2 + windowMs - now,
    charge: () => {
      const at = firstAbove(scores, now);
      const next: number[] = [];
      for (let i = first; i < at; i++) next.push(scores[i] as number);
      for (let i = 0; i < cost; i++) next.push(now);
      for (let i = Math.max(at, first); i < scores.length; i++) next.push(scores[i] as number);
      return { scores: next };
    },
  };
};
