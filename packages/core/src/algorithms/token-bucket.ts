import { BUCKET_LIMITS } from './limits.js';
import { type CompiledLimits, defineAlgorithm } from './module.js';
import { type AlgorithmFn, bucketDelta, type SettleFn, whole } from './types.js';

/** Token bucket state: tokens counted at `tsMs` (the latest time seen). Mirrors lua/token-bucket.lua. */
export interface TokenBucketState {
  readonly tokens: number;
  readonly tsMs: number;
}

/**
 * Token bucket: capacity `limit`, one unit earned back every `intervalMs`, lazy refill,
 * fractional tokens; time going backwards freezes the bucket; one microsecond of refill
 * as slack in comparisons (see lua/token-bucket.lua). Same arithmetic as
 * lua/token-bucket.lua.
 */
const evaluate: AlgorithmFn<TokenBucketState> = (state, now, { limit, intervalMs, cost }) => {
  let tokens = limit;
  let ts = now;
  if (state !== undefined) {
    tokens = state.tokens;
    ts = state.tsMs;
    const elapsed = now - ts;
    if (elapsed > 0) {
      if (elapsed >= (limit - tokens) * intervalMs) {
        tokens = limit;
      } else {
        tokens = tokens + elapsed / intervalMs;
      }
      ts = now;
    }
  }
  if (tokens > limit) tokens = limit;
  let slack = 0.001 / intervalMs;
  if (slack > 0.5) slack = 0.5;
  // A debt beyond this policy's slack was left under other limits: forgiven.
  if (tokens < -slack) tokens = -slack;

  const allowed = tokens + slack >= cost;
  const resetMs = tokens >= limit ? 0 : ts - now + (limit - tokens) * intervalMs;
  let retryAfterMs = 0;
  if (!allowed) retryAfterMs = cost > limit ? -1 : ts - now + (cost - tokens) * intervalMs;

  const left = tokens - cost;
  const tsMs = ts;
  return {
    allowed,
    remaining: whole(tokens + slack, limit),
    resetMs,
    retryAfterMs,
    chargedRemaining: whole(left + slack, limit),
    chargedResetMs: ts - now + (limit - left) * intervalMs,
    charge: () => ({ tokens: left, tsMs }),
  };
};

/**
 * Settles a reservation: the bucket refilled to now, then `deltaUnits` taken (a charge) or given
 * back (a refund, never above the capacity, nor above the reservation less the refill since it:
 * `bucketDelta`). A charge below 0 is a debt, kept as time: an empty
 * bucket counted from `tsMs` in the future (as after time went backwards, it earns nothing until
 * then), so checks wait until it is repaid and no read clamps it; at most one `limit` of it. Full
 * (as good as expired): nothing. Same arithmetic as `SETTLES['token-bucket']` in lua/token-bucket.lua.
 */
const settle: SettleFn<TokenBucketState> = (state, now, params) => {
  const { limit, intervalMs } = params;
  let tokens = state.tokens;
  let ts = state.tsMs;
  const elapsed = now - ts;
  if (elapsed > 0) {
    tokens = elapsed >= (limit - tokens) * intervalMs ? limit : tokens + elapsed / intervalMs;
    ts = now;
  }
  if (tokens > limit) tokens = limit;
  if (ts <= now && tokens >= limit) return undefined;
  const deltaUnits = bucketDelta(params.deltaUnits, ts, params);
  if (deltaUnits === 0) return undefined;
  // Tokens at now, a debt counted in: what an empty bucket earns back until tsMs is owed.
  const level = tokens - (ts - now) / intervalMs;
  let next = level - deltaUnits;
  if (deltaUnits < 0) {
    if (next > limit) next = limit;
  } else {
    const least = Math.min(level, -limit);
    if (next < least) next = least;
  }
  const nextState = next >= 0 ? { tokens: next, tsMs: now } : { tokens: 0, tsMs: now - next * intervalMs };
  return {
    state: nextState,
    keepMs: nextState.tsMs - now + (limit - nextState.tokens) * intervalMs,
  };
};

/**
 * A reserved turn (waiting): the charge left the bucket below empty; the debt is kept as time, an
 * empty bucket from the turn on (it earns nothing until then), which no read forgives. Same
 * arithmetic as `RESERVES['token-bucket']` in lua/token-bucket.lua.
 */
function reserve(charged: TokenBucketState, { intervalMs }: CompiledLimits): TokenBucketState {
  if (charged.tokens >= 0) return charged;
  return { tokens: 0, tsMs: charged.tsMs - charged.tokens * intervalMs };
}

/** The token bucket (lua/token-bucket.lua): capacity `burst`, refilled at the rate, fractional tokens. */
export const tokenBucket = defineAlgorithm({
  name: 'token-bucket',
  evaluate,
  settle,
  reserve,
  state: {
    kind: 'numbers',
    decode: (n, at) => ({ tokens: n[at] as number, tsMs: n[at + 1] as number }),
    encode: (s, n, at) => {
      n[at] = s.tokens;
      n[at + 1] = s.tsMs;
    },
  },
  limits: BUCKET_LIMITS,
  store: { wholeCosts: false },
  windows: { longestWaitWindows: 2, resetsOnBoundary: false },
  lua: { file: 'token-bucket.lua', resultFields: ['left', 'ts'] },
});
