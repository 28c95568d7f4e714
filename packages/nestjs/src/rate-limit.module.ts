/** `RateLimitModule`: the limiter, its store and the guard, provided through DI. */
import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { createLimiter, type Limiter, MemoryStore, type Store } from '@sluice/core';
import { checkModuleOptions, compilePolicies, limiterOptionsOf } from '@sluice/core/adapter';
import {
  ConfigurableRateLimitModule,
  RATE_LIMIT_MODULE_OPTIONS,
  type RateLimitModuleOptions,
} from './module-options.js';
import { RateLimitGuard } from './rate-limit.guard.js';
import { RateLimitService } from './rate-limit.service.js';
import { RATE_LIMIT_STORE, RATE_LIMITER } from './tokens.js';

function storeFactory(options: RateLimitModuleOptions): Store | undefined {
  checkModuleOptions(options);
  if (options.store !== undefined) return options.store;
  if (options.limiter !== undefined) return undefined;
  return new MemoryStore(options.clock === undefined ? {} : { clock: options.clock });
}

function limiterFactory(options: RateLimitModuleOptions, store: Store | undefined): Limiter {
  if (options.limiter !== undefined) return options.limiter;
  // Core validates and compiles the policies (shorthand, failMode default, shadow) exactly as
  // for every adapter; the module's limiter then gets them with its own store and options.
  // With `limit` as a function the module's `default` policy is compiled per limit on the request
  // path (RateLimitService); here a stand-in limit of 1 checks the rest of the shorthand now.
  const { limit } = options;
  const policies = compilePolicies({ ...options, limit: typeof limit === 'function' ? 1 : limit });
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
