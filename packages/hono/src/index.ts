/**
 * @sluice/hono: distributed rate limiting middleware for Hono, Web-standard only
 * (Node, workerd, Deno, Bun).
 * @packageDocumentation
 */

export type { Decision, HttpVerdict, PolicyInput, RateLimitOptions } from '@sluice/core';
export {
  HONO_OPTION_NAMES,
  type HonoRateLimitOptions,
  type HonoRateLimitOptionsFactory,
  type OnLimited,
  type RateLimitEnv,
  type RateLimitVariables,
  rateLimit,
} from './rate-limit.js';
export { matchedPattern } from './route-pattern.js';
