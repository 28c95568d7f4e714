/**
 * Error checks that work across copies of `@sluice/core`. A process can load the package
 * twice (its ES module and its CommonJS build, or two versions in one tree): each copy has
 * its own classes, so an error thrown by one is not `instanceof` the other's class. Every
 * public error class carries a brand under a `Symbol.for` key (error-brands.ts), which is the
 * same symbol in every copy, and these functions read it.
 */

import {
  CIDR_ERROR_BRAND,
  OPTIONS_ERROR_BRAND,
  POLICY_ERROR_BRAND,
  REST_REDIS_ERROR_BRAND,
  STORE_TIMEOUT_ERROR_BRAND,
} from './error-brands.js';
import type { StoreTimeoutError } from './limiter/store-call.js';
import type { CidrError } from './options/cidr.js';
import type { RateLimitOptionsError } from './options/options-error.js';
import type { PolicyError } from './policy/errors.js';
import type { RestRedisError } from './redis/rest-client.js';

function hasBrand(value: unknown, brand: symbol): boolean {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[brand] === true;
}

/** True for a `PolicyError` from any copy of `@sluice/core` (ESM or CommonJS). */
export function isPolicyError(value: unknown): value is PolicyError {
  return hasBrand(value, POLICY_ERROR_BRAND);
}

/** True for a `RateLimitOptionsError` from any copy of `@sluice/core` (ESM or CommonJS). */
export function isRateLimitOptionsError(value: unknown): value is RateLimitOptionsError {
  return hasBrand(value, OPTIONS_ERROR_BRAND);
}

/** True for a `CidrError` from any copy of `@sluice/core` (ESM or CommonJS). */
export function isCidrError(value: unknown): value is CidrError {
  return hasBrand(value, CIDR_ERROR_BRAND);
}

/** True for a `StoreTimeoutError` from any copy of `@sluice/core` (ESM or CommonJS). */
export function isStoreTimeoutError(value: unknown): value is StoreTimeoutError {
  return hasBrand(value, STORE_TIMEOUT_ERROR_BRAND);
}

/** True for a `RestRedisError` from any copy of `@sluice/core` (ESM or CommonJS). */
export function isRestRedisError(value: unknown): value is RestRedisError {
  return hasBrand(value, REST_REDIS_ERROR_BRAND);
}
