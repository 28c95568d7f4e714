/** Every policy default, in one place. */
import type { Algorithm, FailMode } from '../types.js';

/** Defaults applied by `definePolicy` when a field is unset. */
export const POLICY_DEFAULTS = Object.freeze({
  algorithm: 'token-bucket' as Algorithm,
  failMode: 'closed' as FailMode,
  cost: 1,
  shadow: false,
  scope: 'identity' as 'identity' | 'route',
});

/** Every algorithm Sluice implements. */
export const ALGORITHMS: readonly Algorithm[] = Object.freeze([
  'token-bucket',
  'gcra',
  'sliding-window',
  'fixed-window',
  'sliding-log',
]);

/** Algorithms with a bucket capacity (`burst`) and fractional costs. */
export const BUCKET_ALGORITHMS: readonly Algorithm[] = Object.freeze(['token-bucket', 'gcra']);

/**
 * Largest sliding-log `limit` (units per window) a policy may have. A sliding log keeps one
 * record per admitted request (up to twice `limit` records while expired ones wait for a
 * rewrite), and each decision reads the whole log from Redis, so its Redis time grows with
 * the limit: measured per decision (Redis 7.0.15, INFO commandstats) about 30 µs at 100
 * records, 80 at 1000, 600 at 10 000 and 12 000 at 100 000, where a token bucket takes
 * about 12-25. At this cap a decision reads at most about 1000 records. Larger quotas:
 * `sliding-window` (constant cost, an estimate instead of an exact log).
 */
export const SLIDING_LOG_MAX_LIMIT = 500;

/** Every fail mode. */
export const FAIL_MODES: readonly FailMode[] = Object.freeze(['closed', 'open', 'local']);

/** Longest policy name; names appear in headers, metric labels and keys. */
export const MAX_POLICY_NAME_LENGTH = 64;
