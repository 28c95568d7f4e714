/** `@RateLimit()` and `@SkipRateLimit()`: per-controller and per-handler rate-limit metadata. */
import { SetMetadata } from '@nestjs/common';
import { policyNameList, type RouteLimit, routeLimit } from '@sluice/core/adapter';
import type { RateLimitRequest, RateLimitRouteOptions } from './module-options.js';
import { RATE_LIMIT_METADATA, SKIP_RATE_LIMIT_METADATA } from './tokens.js';

export type { RateLimitRouteOptions } from './module-options.js';

/** What `@RateLimit()` stores: module policies by name, or a route's own policy (core's `RouteLimit`). */
export type RateLimitMetadata = RouteLimit<RateLimitRequest>;

/** What `@SkipRateLimit()` stores: `true` skips every policy, a list skips those named. */
export type SkipRateLimitMetadata = true | readonly string[];

function setMetadata(
  key: string,
  value: unknown,
  target: object,
  propertyKey: string | symbol | undefined,
  descriptor: PropertyDescriptor | undefined,
): void {
  if (descriptor === undefined) SetMetadata(key, value)(target as () => unknown);
  else SetMetadata(key, value)(target, propertyKey as string | symbol, descriptor);
}

/**
 * Rate-limits a controller or a handler. The handler's decorator wins over the controller's.
 *
 * - `@RateLimit('payments', 'transfers')`: these module policies, decided together.
 * - `@RateLimit({ policies: ['payments'], cost: 5 })`: with a cost for this route.
 * - `@RateLimit({ limit: 10, window: '1m' })`: a policy of this route's own (token bucket
 *   by default, as every policy), on the module's store, one budget per route.
 *
 * Bad arguments throw when the class is defined.
 */
export function RateLimit(...policies: string[]): ClassDecorator & MethodDecorator;
export function RateLimit(options: RateLimitRouteOptions): ClassDecorator & MethodDecorator;
export function RateLimit(...args: unknown[]): ClassDecorator & MethodDecorator {
  return ((target: object, propertyKey?: string | symbol, descriptor?: PropertyDescriptor) => {
    const meta = routeLimit<RateLimitRequest>(args, target, propertyKey);
    setMetadata(RATE_LIMIT_METADATA, meta, target, propertyKey, descriptor);
    return descriptor;
  }) as ClassDecorator & MethodDecorator;
}

/**
 * Skips rate limiting on a controller or a handler: every policy with no arguments, or
 * only the named ones (`@SkipRateLimit('burst')`). The handler's decorator wins over the
 * controller's.
 */
export function SkipRateLimit(...policies: string[]): ClassDecorator & MethodDecorator {
  const value: SkipRateLimitMetadata =
    policies.length === 0 ? true : policyNameList(policies, '@SkipRateLimit()');
  return ((target: object, propertyKey?: string | symbol, descriptor?: PropertyDescriptor) => {
    setMetadata(SKIP_RATE_LIMIT_METADATA, value, target, propertyKey, descriptor);
    return descriptor;
  }) as ClassDecorator & MethodDecorator;
}
