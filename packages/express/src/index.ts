/**
 * @sluice/express: distributed rate limiting middleware for Express 4 and 5.
 * @packageDocumentation
 */

export type { Decision, HttpVerdict, PolicyInput, RateLimitOptions } from '@sluice/core';
export {
  EXPRESS_OPTION_NAMES,
  type ExpressRateLimitOptions,
  type OnLimited,
  rateLimit,
} from './rate-limit.js';
export { routePattern } from './route-pattern.js';
export { checkTrustProxy } from './trust-proxy.js';
