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
  if (tat !== undefined) {
    used = (tat - nowF) / scale;
    if (used < 0) {
      used = 0;
    } else if (used > limit + slack) {
      used = limit + slack;
    }
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
    resetMs: used * intervalMs,
    retryAfterMs,
    chargedRemaining: whole(limit - used2 + slack, limit),
    chargedResetMs: used2 * intervalMs,
    charge: () => ({ tat: tat2 }),
  };
};
