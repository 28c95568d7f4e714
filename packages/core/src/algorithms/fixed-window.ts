import { WINDOW_LIMITS } from './limits.js';
import { defineAlgorithm } from './module.js';
import { type AlgorithmFn, EPS, type SettleFn, settleCeiling, whole } from './types.js';

/**
 * Fixed window state: the window's start (ms since the epoch) and the units admitted in it.
 * Mirrors lua/fixed-window.lua ("f<startMs>|<count>").
 */
export interface FixedWindowState {
  readonly startMs: number;
  readonly count: number;
}

/**
 * True when `ms` is a start of the windows of length `windowMs`, computed as the writer
 * computed it (lua/common.lua `is_window_start`): a state written under another window
 * length is not read as one of these windows.
 */
export function isWindowStart(ms: number, windowMs: number): boolean {
  return Math.floor(ms / windowMs + 0.5) * windowMs === ms;
}

/**
 * Fixed window: one counter per epoch-aligned window; a state whose start is not a start of
 * this policy's windows (written under another window length) starts fresh. Same
 * arithmetic as lua/fixed-window.lua.
 */
const evaluate: AlgorithmFn<FixedWindowState> = (state, now, { limit, windowMs, cost }) => {
  let win = Math.floor(now / windowMs) * windowMs;
  let count = 0;
  if (
    state !== undefined &&
    (state.startMs === win || (state.startMs > win && isWindowStart(state.startMs, windowMs)))
  ) {
    win = state.startMs;
    count = state.count;
  }
  const ends = win + windowMs - now;

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
    charge: () => ({ startMs: win, count: count2 }),
  };
};

/**
 * Settles a reservation in the window it was charged in: `deltaUnits` added to that window's
 * count (a charge, up to a debt of one `limit` beyond it) or taken off (a refund, never below 0).
 * Once that window is over (the state holds another), nothing. Same arithmetic as
 * `SETTLES['fixed-window']` in lua/fixed-window.lua.
 */
const settle: SettleFn<FixedWindowState> = (state, now, { limit, windowMs, deltaUnits, reservedAtMs }) => {
  const win = Math.floor(reservedAtMs / windowMs) * windowMs;
  // Another window, or the reservation's window is over: nothing to settle.
  if (state.startMs !== win || now >= win + windowMs) return undefined;
  let count = state.count + deltaUnits;
  if (count < 0) count = 0;
  const most = settleCeiling(state.count, limit);
  if (count > most) count = most;
  return { state: { startMs: win, count }, keepMs: win + windowMs - now };
};

/** The fixed window (lua/fixed-window.lua): one counter per epoch-aligned window. */
export const fixedWindow = defineAlgorithm({
  name: 'fixed-window',
  evaluate,
  settle,
  state: {
    kind: 'numbers',
    decode: (n, at) => ({ startMs: n[at] as number, count: n[at + 1] as number }),
    encode: (s, n, at) => {
      n[at] = s.startMs;
      n[at + 1] = s.count;
    },
  },
  limits: WINDOW_LIMITS,
  store: { wholeCosts: false },
  windows: { longestWaitWindows: 1, resetsOnBoundary: true },
  lua: { file: 'fixed-window.lua', resultFields: ['win', 'count2'] },
});
