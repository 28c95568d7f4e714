import { isWindowStart } from './fixed-window.js';
import { WINDOW_LIMITS } from './limits.js';
import { defineAlgorithm } from './module.js';
import { type AlgorithmFn, EPS, type SettleFn, settleCeiling, whole } from './types.js';

/**
 * Sliding window state: the window's start (ms since the epoch) and the units of that
 * window and the one before. Mirrors lua/sliding-window.lua ("w<startMs>|<current>|<previous>").
 */
export interface SlidingWindowState {
  readonly startMs: number;
  readonly current: number;
  readonly previous: number;
}

/** An instant to come that rounds a hair early is reported this much later (lua/sliding-window.lua). */
const SLIDING_WINDOW_MARGIN_MS = 0.0009765625;

/**
 * The instant `start + windowMs * (1 - room / units)` at which `units` weighted by the rest
 * of the window starting at `start` (plus `plus` unweighted) leave room for `cost`, checked
 * as a read at that instant computes it; 2^-10 ms later when the rounded instant falls a
 * hair early (lua/sliding-window.lua `sliding_window_at`).
 */
function windowAt(
  start: number,
  windowMs: number,
  room: number,
  units: number,
  plus: number,
  cost: number,
  limit: number,
): number {
  const at = start + windowMs * (1 - room / units);
  let f = (at - start) / windowMs;
  if (f > 1) f = 1;
  return units * (1 - f) + plus + cost > limit + EPS ? at + SLIDING_WINDOW_MARGIN_MS : at;
}

/**
 * Sliding window counter: previous window's units weighted by its overlap plus the
 * current window's units; a state whose start is not a start of this policy's windows
 * starts fresh. Same arithmetic as lua/sliding-window.lua.
 */
const evaluate: AlgorithmFn<SlidingWindowState> = (state, now, { limit, windowMs, cost }) => {
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
        at = windowAt(win, windowMs, room, prev, cur, cost, limit);
      } else {
        const room2 = limit - cost;
        // cur === room2: the window end, where cur + cost may still round above the limit;
        // windowAt returns it, with the margin when it does (lua/sliding-window.lua).
        at = cur < room2 ? win + windowMs : windowAt(win + windowMs, windowMs, room2, cur, 0, cost, limit);
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

/** `units` + `deltaUnits`, never below 0 nor above a debt of one `limit` (or `units` if more). */
function settled(units: number, deltaUnits: number, limit: number): number {
  let next = units + deltaUnits;
  if (next < 0) next = 0;
  const most = settleCeiling(units, limit);
  return Math.min(next, most);
}

/**
 * Settles a reservation in the window it was charged in: that window's count is the state's
 * current one, or its previous one once the state moved on a window; older, nothing. Same
 * arithmetic as `SETTLES['sliding-window']` in lua/sliding-window.lua.
 */
const settle: SettleFn<SlidingWindowState> = (state, now, { limit, windowMs, deltaUnits, reservedAtMs }) => {
  const win = Math.floor(reservedAtMs / windowMs) * windowMs;
  const { startMs } = state;
  const keepMs = startMs + 2 * windowMs - now;
  // Both windows are over: the key is as good as expired, nothing to settle.
  if (keepMs <= 0) return undefined;
  if (startMs === win) {
    return {
      state: { startMs, current: settled(state.current, deltaUnits, limit), previous: state.previous },
      keepMs,
    };
  }
  if (startMs === win + windowMs) {
    return {
      state: { startMs, current: state.current, previous: settled(state.previous, deltaUnits, limit) },
      keepMs,
    };
  }
  return undefined;
};

/** The sliding window counter (lua/sliding-window.lua): current + previous window counts, weighted. */
export const slidingWindow = defineAlgorithm({
  name: 'sliding-window',
  evaluate,
  settle,
  state: {
    kind: 'numbers',
    decode: (n, at) => ({
      startMs: n[at] as number,
      current: n[at + 1] as number,
      previous: n[at + 2] as number,
    }),
    encode: (s, n, at) => {
      n[at] = s.startMs;
      n[at + 1] = s.current;
      n[at + 2] = s.previous;
    },
  },
  limits: WINDOW_LIMITS,
  store: { wholeCosts: false },
  windows: { longestWaitWindows: 2, resetsOnBoundary: false },
  lua: { file: 'sliding-window.lua', resultFields: ['win', 'cur2', 'prev'] },
});
