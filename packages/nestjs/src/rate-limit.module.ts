/** `RateLimitModule`: the limiter, its store and the guard, provided through DI. */
import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { createLimiter, type Limiter, MemoryStore, type Store } from '@sluice/core';
import {
  checkOption,
  checkOptionNames,
  compilePolicies,
  FRAMEWORK_OPTIONS,
  HTTP_OPTIONS,
  RateLimitOptionsError,
} from '@sluice/core/adapter';
import {
  ConfigurableRateLimitModule,
  limiterOptionsOf,
  NEST_MODULE_OPTION_NAMES,
  RATE_LIMIT_MODULE_OPTIONS,
  type RateLimitModuleOptions,
} from './module-options.js';
import { RateLimitGuard } from './rate-limit.guard.js';
import { RateLimitService } from './rate-limit.service.js';
import { RATE_LIMIT_STORE, RATE_LIMITER } from './tokens.js';

const SOURCE = 'RateLimitModule';

function checkOptions(options: RateLimitModuleOptions): void {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new RateLimitOptionsError('options', options, 'must be an object', SOURCE);
  }
  checkOptionNames(
    options as unknown as Record<string, unknown>,
    NEST_MODULE_OPTION_NAMES,
    'RateLimitModule.forRoot()',
    SOURCE,
  );
  const error = (option: string, value: unknown, requirement: string) =>
    new RateLimitOptionsError(option, value, requirement, SOURCE);
  checkOption(FRAMEWORK_OPTIONS.defaultPolicies, 'defaultPolicies', options.defaultPolicies, error);
  checkOption(HTTP_OPTIONS.store, 'store', options.store, error);
  const shorthand = options.limit !== undefined || options.window !== undefined;
  if (options.limiter !== undefined && (options.policies !== undefined || shorthand)) {
    throw new RateLimitOptionsError(
      'limiter',
      options.limiter,
      'cannot be combined with "policies" (or "limit" and "window"): give one of them',
      SOURCE,
    );
  }
  if (
    options.limiter === undefined &&
    !shorthand &&
    (!Array.isArray(options.policies) || options.policies.length === 0)
  ) {
    throw new RateLimitOptionsError(
      'policies',
      options.policies,
      'must be a non-empty array of policies (or give "limit" and "window", or "limiter")',
      SOURCE,
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
