/**
 * @sluice/koa: distributed rate limiting middleware for Koa 2 and 3.
 * @packageDocumentation
 */

export type { Decision, HttpVerdict, PolicyInput, RateLimitOptions } from '@sluice/core';
export { matchedRoute } from './matched-route.js';
export { checkProxy } from './proxy-warning.js';
export {
  KOA_OPTION_NAMES,
  type KoaRateLimitOptions,
  type OnLimited,
  type RateLimitState,
  rateLimit,
} from './rate-limit.js';
