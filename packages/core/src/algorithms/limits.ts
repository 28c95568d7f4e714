/** The two kinds of policy limits an algorithm module takes: a bucket (burst + rate) or a window. */
import type { LimitRules } from './module.js';

/**
 * Bucket limits (token bucket, GCRA): `limit` per `window` (or `rate`) is the refill rate and
 * `burst` the capacity (default `limit`): `{ burst: 20, rate: '1/s' }` compiles to limit 20,
 * intervalMs 1000, windowMs 20000 (empty to full). Costs may be fractions.
 */
export const BUCKET_LIMITS: LimitRules = Object.freeze({
  burst: true,
  fractionalCosts: true,
  compile: (rateLimit: number, rateWindowMs: number, burst: number | undefined) => {
    const limit = burst ?? rateLimit;
    return {
      limit,
      windowMs: burst === undefined ? rateWindowMs : (limit * rateWindowMs) / rateLimit,
      intervalMs: rateWindowMs / rateLimit,
    };
  },
});

/** Window limits: `limit` whole units per `window`; no burst. */
export const WINDOW_LIMITS: LimitRules = Object.freeze({
  burst: false,
  fractionalCosts: false,
  compile: (rateLimit: number, rateWindowMs: number) => ({
    limit: rateLimit,
    windowMs: rateWindowMs,
    intervalMs: rateWindowMs / rateLimit,
  }),
});
