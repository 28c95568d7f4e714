import { isWindowStart } from './fixed-window.js';
import { type AlgorithmFn, EPS, whole } from './types.js';

/**
 * Sliding window state: the window's start (ms since the epoch) and the units of that
 * window and the one before. Mirrors lua/sliding-window.lua ("w<startMs>|<current>|<previous>").
 */
export interface SlidingWindowState {
  readonly startMs: number;
  readonly current: number;
  readonly previous: number;
}

/**
 * Sliding window counter: previous window's units weighted by its overlap plus the
 * current window's units; a state whose start is not a start of this policy's windows
 * starts fresh. Same arithmetic as lua/sliding-window.lua.
 */
export const slidingWindow: AlgorithmFn<SlidingWindowState> = (state, now, { limit, windowMs, cost }) => {
  const n = Math.floor(now / windowMs);
  let win = n * windowMs;
  let cur = 0;
  let prev = 0;
  if (state !== undefined) {
    const saved = state.startMs;
    if (saved === win || (saved > win && isWindowStart(saved, windowMs))) {
      win = saved;
      cur = state.current;
      prev = state.previous;
    } else if (saved === (n - 1) * windowMs) {
      prev = state.current;
    }
  }
  let f = (now - win) / windowMs;
  if (f < 0) {
    f = 0;
  } else if (f > 1) {
    f = 1;
  }
  const est = prev * (1 - f) + cur;

  const allowed = est + cost <= limit + EPS;
  let resetMs = 0;
  if (cur > 0) {
    resetMs = win + 2 * windowMs - now;
  } else if (prev > 0) {
    resetMs = win + windowMs - now;
  }
  let retryAfterMs = 0;
  if (!allowed) {
    if (cost > limit) {
      retryAfterMs = -1;
    } else {
      const room = limit - cur - cost;
      let at: number;
      if (room >= 0) {
        at = win + windowMs * (1 - room / prev);
      } else {
        const room2 = limit - cost;
        at = cur <= room2 ? win + windowMs : win + windowMs + windowMs * (1 - room2 / cur);
      }
      retryAfterMs = at - now;
      if (retryAfterMs < 0) retryAfterMs = 0;
    }
  }

  const cur2 = cur + cost;
  return {
    allowed,
    remaining: whole(limit - est, limit),
    resetMs,
    retryAfterMs,
    chargedRemaining: whole(limit - (est + cost), limit),
    chargedResetMs: win + 2 * windowMs - now,
    charge: () => ({ startMs: win, current: cur2, previous: prev }),
  };
};
