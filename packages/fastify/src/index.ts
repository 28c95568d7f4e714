/** @sluice/fastify: distributed rate limiting for Fastify 5, as a plugin. @packageDocumentation */
export type { Decision, HttpVerdict, PolicyInput, RateLimitOptions } from '@sluice/core';
export {
  FASTIFY_OPTION_NAMES,
  type FastifyRateLimitOptions,
  type FastifyRouteRateLimitOptions,
  type OnLimited,
  rateLimit,
  rateLimit as default,
} from './plugin.js';
