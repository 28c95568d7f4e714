import { type AlgorithmFn, whole } from './types.js';

/**
 * GCRA state: the theoretical arrival time in 1/scale-ths of an emission interval, an
 * integer (see lua/gcra.lua for the scale). Mirrors lua/gcra.lua.
 */
export interface GcraState {
  readonly tat: number;
}

/** 2^s with s = 11 + floor(log2(intervalMs)), clamped to 10..40 (lua/gcra.lua `gcra_scale`). */
export function gcraScale(intervalMs: number): number {
  let scale = 2048;
  let t = intervalMs;
  let s = 11;
  while (t >= 2 && s < 40) {
    t = t / 2;
    scale = scale * 2;
    s = s + 1;
  }
  while (t < 1 && s > 10) {
    t = t * 2;
    scale = scale / 2;
    s = s - 1;
  }
  return scale;
}

/**
 * Ms from `now` until the theoretical arrival time `tat` (scaled units), at least 0. The
 * arrival time is turned into ms since the epoch first, a value of the state alone, and
 * the difference of two nearby doubles is exact: every call on the same state names the
 * same instant, a later call reports exactly the time elapsed less, and the key's TTL
 * (set from the charge's value) never outlives a later report by more than its one ms
 * of margin. (Measured from the scaled clock, the two calls rounded apart.) Same
 * arithmetic as lua/gcra.lua `gcra_ms_until`.
 */
function msUntil(tat: number, scale: number, intervalMs: number, now: number): number {
  const ms = (tat / scale) * intervalMs - now;
  return Math.max(ms, 0);
}

/**
 * GCRA: exact rate (one unit per `intervalMs`) with a burst of `limit`, one integer of
 * state. Same arithmetic as lua/gcra.lua.
 */
export const gcra: AlgorithmFn<GcraState> = (state, now, { limit, intervalMs, cost }) => {
  const scale = gcraScale(intervalMs);
  const nowF = (now / intervalMs) * scale;
  let slack = 0.001 / intervalMs;
  if (slack > 0.5) slack = 0.5;
  if (slack < 4 / scale) slack = 4 / scale;
  const tat = state?.tat;
  let used = 0;
  let resetMs = 0;
  if (tat !== undefined) {
    used = (tat - nowF) / scale;
    if (used < 0) {
      used = 0;
    } else if (used > limit + slack) {
      used = limit + slack;
    }
    resetMs = used >= limit + slack ? used * intervalMs : msUntil(tat, scale, intervalMs, now);
  }

  const allowed = used + cost <= limit + slack;
  let retryAfterMs = 0;
  if (!allowed) retryAfterMs = cost > limit ? -1 : (used + cost - limit) * intervalMs;

  let base = Math.floor(nowF);
  if (tat !== undefined && tat > nowF) base = tat;
  const tat2 = base + Math.ceil(cost * scale);
  const used2 = (tat2 - nowF) / scale;
  return {
    allowed,
    remaining: whole(limit - used + slack, limit),
    resetMs,
    retryAfterMs,
    chargedRemaining: whole(limit - used2 + slack, limit),
    chargedResetMs: msUntil(tat2, scale, intervalMs, now),
    charge: () => ({ tat: tat2 }),
  };
};
