/** `RateLimitModule`: the limiter, its store and the guard, provided through DI. */
import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { createLimiter, type Limiter, MemoryStore, resolveRateLimitOptions, type Store } from '@sluice/core';
import {
  ConfigurableRateLimitModule,
  limiterOptionsOf,
  RATE_LIMIT_MODULE_OPTIONS,
  type RateLimitModuleOptions,
} from './module-options.js';
import { RateLimitGuard } from './rate-limit.guard.js';
import { RateLimitService } from './rate-limit.service.js';
import { RATE_LIMIT_STORE, RATE_LIMITER } from './tokens.js';

const KNOWN_OPTIONS: readonly string[] = [
  'policies',
  'limit',
  'window',
  'algorithm',
  'failMode',
  'store',
  'limiter',
  'prefix',
  'timeoutMs',
  'breaker',
  'denyCache',
  'localFallback',
  'clock',
  'onDecision',
  'defaultPolicies',
  'identity',
  'cost',
  'skip',
  'headers',
  'shadowHeaders',
  'ipv6Subnet',
  'shadow',
];

function checkOptions(options: RateLimitModuleOptions): void {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(`RateLimitModule: options must be an object, got ${String(options)}`);
  }
  for (const key of Object.keys(options)) {
    if (!KNOWN_OPTIONS.includes(key)) throw new TypeError(`RateLimitModule: unknown option "${key}"`);
  }
  if (
    options.defaultPolicies !== undefined &&
    (!Array.isArray(options.defaultPolicies) ||
      options.defaultPolicies.some((name) => typeof name !== 'string'))
  ) {
    throw new TypeError(
      `RateLimitModule: "defaultPolicies" must be an array of policy names, got ${String(options.defaultPolicies)}`,
    );
  }
  const shorthand = options.limit !== undefined || options.window !== undefined;
  if (options.limiter !== undefined && (options.policies !== undefined || shorthand)) {
    throw new TypeError('RateLimitModule: give "policies" (or "limit" and "window") or "limiter", not both');
  }
  if (
    options.limiter === undefined &&
    !shorthand &&
    (!Array.isArray(options.policies) || options.policies.length === 0)
  ) {
    throw new TypeError(
      `RateLimitModule: "policies" must be a non-empty array of policies (or give "limit" and "window", or "limiter"), got ${String(options.policies)}`,
    );
  }
}

function storeFactory(options: RateLimitModuleOptions): Store | undefined {
  checkOptions(options);
  if (options.store !== undefined) return options.store;
  if (options.limiter !== undefined) return undefined;
  return new MemoryStore(options.clock === undefined ? {} : { clock: options.clock });
}

function limiterFactory(options: RateLimitModuleOptions, store: Store | undefined): Limiter {
  if (options.limiter !== undefined) return options.limiter;
  // Core validates and compiles the policies (shorthand, failMode default, shadow) exactly as
  // for every adapter; the module's limiter then gets them with its own store and options.
  const { policies } = resolveRateLimitOptions(
    {
      ...(options.policies !== undefined && { policies: options.policies }),
      ...(options.limit !== undefined && { limit: options.limit }),
      ...(options.window !== undefined && { window: options.window }),
      ...(options.algorithm !== undefined && { algorithm: options.algorithm }),
      ...(options.failMode !== undefined && { failMode: options.failMode }),
      ...(options.shadow !== undefined && { shadow: options.shadow }),
    },
    'nestjs',
  ).limiter;
  return createLimiter({ ...limiterOptionsOf(options), policies, ...(store !== undefined && { store }) });
}

/**
 * Rate limiting for NestJS.
 *
 * `RateLimitModule.forRoot({ policies, store })` or `forRootAsync({ useFactory, inject })`
 * provides the limiter (`RATE_LIMITER`), the store (`RATE_LIMIT_STORE`), `RateLimitService`
 * and `RateLimitGuard`. The module is global unless `isGlobal: false`.
 */
@Module({
  imports: [DiscoveryModule],
  providers: [
    { provide: RATE_LIMIT_STORE, useFactory: storeFactory, inject: [RATE_LIMIT_MODULE_OPTIONS] },
    {
      provide: RATE_LIMITER,
      useFactory: limiterFactory,
      inject: [RATE_LIMIT_MODULE_OPTIONS, RATE_LIMIT_STORE],
    },
    RateLimitService,
    RateLimitGuard,
  ],
  exports: [RATE_LIMITER, RATE_LIMIT_STORE, RATE_LIMIT_MODULE_OPTIONS, RateLimitService, RateLimitGuard],
})
export class RateLimitModule extends ConfigurableRateLimitModule {}
