import { BUCKET_LIMITS } from './limits.js';
import { type CompiledLimits, defineAlgorithm } from './module.js';
import { type AlgorithmFn, bucketDelta, type SettleFn, settleCeiling, whole } from './types.js';

/**
 * GCRA state: `used` units owed at `tsMs`; the theoretical arrival time is
 * `tsMs + used * intervalMs`. Mirrors lua/gcra.lua ("g<used>|<tsMs>").
 */
export interface GcraState {
  readonly used: number;
  readonly tsMs: number;
}

/** Ticks per unit are capped so that limit x ticks stays at most 2^40 (lua/gcra.lua). */
const GCRA_TICKS_MAX = 1_099_511_627_776;
/** Tolerance, in ticks, when a number of units is rounded up to whole ticks. */
const GCRA_TICK_SLACK = 0.001;

/**
 * Ticks per unit for a limit: 10^k, k = 9 or lower, with limit x ticks <= 2^40, so decimal
 * costs are whole numbers of ticks and sums of them stay exact (lua/gcra.lua `gcra_ticks`).
 */
export function gcraTicksPerUnit(limit: number): number {
  let q = 1e9;
  while (q > 1 && limit * q > GCRA_TICKS_MAX) q = q / 10;
  return q;
}

/** A charge after the clock moved is counted from this many ms earlier (2^-10, exact). */
const GCRA_DELTA_MS = 0.0009765625;
/** The most units the rounding allowance (see `evaluate`) ever adds to the burst: 1e-6. */
const GCRA_ROUNDING_MAX = 0.000001;
/** The allowance applies where a cost's rounding is at most 1/GCRA_ROUNDING_SHARE of it. */
const GCRA_ROUNDING_SHARE = 1_000_000;

/**
 * GCRA: exact rate (one unit per `intervalMs`) with a burst of `limit`. At the state's own
 * time it counts whole ticks (with an allowance for costs rounded up to them), so exactly
 * floor(burst / cost) requests fit at one instant at any rate; once the clock moved on it drains and compares with about a microsecond of
 * refill as slack. A burst cut caps what is owed at the new limit, so no wait exceeds the
 * policy's own and a client that waits `retryAfterMs` is admitted. Same arithmetic as
 * lua/gcra.lua.
 */
const evaluate: AlgorithmFn<GcraState> = (state, now, { limit, intervalMs, cost }) => {
  const q = gcraTicksPerUnit(limit);
  const lq = limit * q;
  let ct = Math.ceil(cost * q - GCRA_TICK_SLACK);
  if (ct < 1) ct = 1;
  const cu = ct / q;
  const delta = GCRA_DELTA_MS / intervalMs;
  let slack = delta;
  if (slack > 0.5) slack = 0.5;
  const most = limit + slack + delta;
  let used = 0;
  let ts = now;
  let tat = now;
  let moved = false;
  if (state !== undefined) {
    used = state.used;
    ts = state.tsMs;
    if (used > most) used = most;
    if (used < 0) used = 0;
    tat = ts + used * intervalMs;
    if (now > ts) {
      // Drained: exactly a fresh key (as an expired one is).
      used = used - (now - ts) / intervalMs;
      if (used > 0) {
        moved = true;
      } else {
        used = 0;
      }
      ts = now;
    }
  }

  const ticks = used > 0 ? Math.ceil(used * q - GCRA_TICK_SLACK) : 0;
  // Rounding allowance: a cost that is no whole number of ticks (1/3) is charged up to a tick
  // more; what is owed is compared as that many costs' exact sum (n costs of this size owe n
  // times the excess), at most GCRA_ROUNDING_MAX units, so exactly floor(burst / cost) fit.
  let excess = ct - cost * q;
  // Only where rounding is a sliver of the cost: a cost below a few ticks is charged its ticks.
  if (excess < 0 || excess * GCRA_ROUNDING_SHARE > ct) excess = 0;
  let allowance = (excess * (ticks + ct)) / ct;
  if (allowance > GCRA_ROUNDING_MAX * q) allowance = GCRA_ROUNDING_MAX * q;
  const allowed = moved ? used + cu <= limit + slack + allowance / q : ticks + ct <= lq + allowance;
  const remaining = moved ? whole(limit + slack - used, limit) : whole((lq - ticks) / q, limit);
  let retryAfterMs = 0;
  if (!allowed) retryAfterMs = cost > limit ? -1 : (used + cu - limit) * intervalMs + (ts - now);

  // The charged state, and what a read of it at this instant reports.
  let left: number;
  let tsMs: number;
  let chargedRemaining: number;
  if (moved) {
    left = used + cu + delta;
    tsMs = now - GCRA_DELTA_MS;
    let after = left - (now - tsMs) / intervalMs;
    if (after < 0) after = 0;
    chargedRemaining = whole(limit + slack - after, limit);
  } else {
    left = (ticks + ct) / q;
    tsMs = ts;
    chargedRemaining = whole((lq - ticks - ct) / q, limit);
  }
  return {
    allowed,
    remaining,
    resetMs: used > 0 && tat > now ? tat - now : 0,
    retryAfterMs,
    chargedRemaining,
    chargedResetMs: tsMs + left * intervalMs - now,
    charge: () => ({ used: left, tsMs }),
  };
};

/**
 * Settles a reservation: what is owed drained to now, then `deltaUnits` added (a charge) or taken
 * off (a refund, never below 0: never above the capacity, nor above the reservation less the
 * refill since it: `bucketDelta`). Owed beyond the burst is a debt, kept
 * as time: a full burst owed at `tsMs` in the future (nothing drains until then, as after time
 * went backwards), so no read clamps it; at most one `limit` of it. Drained (as good as
 * expired): nothing. Same arithmetic as `SETTLES['gcra']` in lua/gcra.lua.
 */
const settle: SettleFn<GcraState> = (state, now, params) => {
  const { limit, intervalMs } = params;
  let used = state.used;
  let ts = state.tsMs;
  if (used < 0) used = 0;
  if (now > ts) {
    used = used - (now - ts) / intervalMs;
    if (used < 0) used = 0;
    ts = now;
  }
  if (ts <= now && used <= 0) return undefined;
  const deltaUnits = bucketDelta(params.deltaUnits, ts, params);
  if (deltaUnits === 0) return undefined;
  // Units owed at now, a debt counted in.
  const owed = used + (ts - now) / intervalMs;
  let next = owed + deltaUnits;
  if (next < 0) next = 0;
  const most = settleCeiling(owed, limit);
  if (next > most) next = most;
  const nextState =
    next <= limit ? { used: next, tsMs: now } : { used: limit, tsMs: now + (next - limit) * intervalMs };
  return { state: nextState, keepMs: nextState.tsMs + nextState.used * intervalMs - now };
};

/**
 * A reserved turn (waiting): the charge owes more than the burst; the debt is kept as time, a
 * full burst owed from the turn on (nothing drains until then), which no read clamps. Same
 * arithmetic as `RESERVES['gcra']` in lua/gcra.lua.
 */
function reserve(charged: GcraState, { limit, intervalMs }: CompiledLimits): GcraState {
  if (charged.used <= limit) return charged;
  return { used: limit, tsMs: charged.tsMs + (charged.used - limit) * intervalMs };
}

/** GCRA (lua/gcra.lua): exact rate with a burst tolerance, one timestamp of state. */
export const gcra = defineAlgorithm({
  name: 'gcra',
  evaluate,
  settle,
  reserve,
  state: {
    kind: 'numbers',
    decode: (n, at) => ({ used: n[at] as number, tsMs: n[at + 1] as number }),
    encode: (s, n, at) => {
      n[at] = s.used;
      n[at + 1] = s.tsMs;
    },
  },
  limits: BUCKET_LIMITS,
  store: { wholeCosts: false },
  windows: { longestWaitWindows: 2, resetsOnBoundary: false },
  lua: { file: 'gcra.lua', resultFields: ['left', 'ts', 'exact'] },
});
