import { type AlgorithmFn, EPS, whole } from './types.js';

/** Fixed window state: window number and the units admitted in it. Mirrors lua/fixed-window.lua. */
export interface FixedWindowState {
  readonly window: number;
  readonly count: number;
}

/** Fixed window: one counter per epoch-aligned window. Same arithmetic as lua/fixed-window.lua. */
export const fixedWindow: AlgorithmFn<FixedWindowState> = (state, now, { limit, windowMs, cost }) => {
  const n = Math.floor(now / windowMs);
  let win = n;
  let count = 0;
  if (state !== undefined && state.window >= n) {
    win = state.window;
    count = state.count;
  }
  const ends = (win + 1) * windowMs - now;

  const allowed = count + cost <= limit + EPS;
  let retryAfterMs = 0;
  if (!allowed) retryAfterMs = cost > limit ? -1 : ends;

  const count2 = count + cost;
  return {
    allowed,
    remaining: whole(limit - count, limit),
    resetMs: count > 0 ? ends : 0,
    retryAfterMs,
    chargedRemaining: whole(limit - count2, limit),
    chargedResetMs: ends,
    charge: () => ({ window: win, count: count2 }),
  };
};
