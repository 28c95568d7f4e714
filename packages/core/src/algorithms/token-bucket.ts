import { BUCKET_LIMITS } from './limits.js';
import { defineAlgorithm } from './module.js';
import { type AlgorithmFn, whole } from './types.js';

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

/** The token bucket (lua/token-bucket.lua): capacity `burst`, refilled at the rate, fractional tokens. */
export const tokenBucket = defineAlgorithm({
  name: 'token-bucket',
  evaluate,
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
  windows: { longestWaitWindows: 1, resetsOnBoundary: false },
  lua: { file: 'token-bucket.lua', resultFields: ['left', 'ts'] },
});
