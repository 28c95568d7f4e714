/**
 * The brands of Sluice's public error classes: one `Symbol.for` key each, the same symbol in every
 * copy of `@sluice/core` (its ES module and its CommonJS build, or two versions in one tree). Each
 * error class carries its brand; `error-guards.ts` reads them.
 */

/** The brand of `PolicyError`. */
export const POLICY_ERROR_BRAND = Symbol.for('@sluice/core.PolicyError');
/** The brand of `RateLimitOptionsError`. */
export const OPTIONS_ERROR_BRAND = Symbol.for('@sluice/core.RateLimitOptionsError');
/** The brand of `CidrError`. */
export const CIDR_ERROR_BRAND = Symbol.for('@sluice/core.CidrError');
/** The brand of `StoreTimeoutError`. */
export const STORE_TIMEOUT_ERROR_BRAND = Symbol.for('@sluice/core.StoreTimeoutError');
/** The brand of `RestRedisError`. */
export const REST_REDIS_ERROR_BRAND = Symbol.for('@sluice/core.RestRedisError');
