/**
 * @sluice/nestjs: distributed rate limiting for NestJS (Express and Fastify platforms):
 * `RateLimitModule`, `@RateLimit()`, `@SkipRateLimit()` and `RateLimitGuard`.
 * @packageDocumentation
 */

export type { Decision, HttpVerdict, Limiter, PolicyInput, ProblemBody, Store } from '@sluice/core';
export {
  RateLimit,
  type RateLimitMetadata,
  type RateLimitRouteOptions,
  SkipRateLimit,
  type SkipRateLimitMetadata,
} from './decorators.js';
export {
  NEST_MODULE_OPTION_NAMES,
  RATE_LIMIT_MODULE_OPTIONS,
  type RateLimitModuleAsyncOptions,
  type RateLimitModuleExtras,
  type RateLimitModuleForRootOptions,
  type RateLimitModuleOptions,
  type RateLimitRequest,
} from './module-options.js';
export { RateLimitException } from './rate-limit.exception.js';
export { type GuardRequestFacts, RateLimitGuard } from './rate-limit.guard.js';
export { RateLimitModule } from './rate-limit.module.js';
export { RateLimitService, type RouteRateLimit } from './rate-limit.service.js';
export { handlerMethod, handlerPattern } from './route-pattern.js';
export { RATE_LIMIT_METADATA, RATE_LIMIT_STORE, RATE_LIMITER, SKIP_RATE_LIMIT_METADATA } from './tokens.js';
