/** The options of `RateLimitModule.forRoot()` / `forRootAsync()`, and the module builder. */
import { ConfigurableModuleBuilder } from '@nestjs/common';
import type { LimiterOptions, PolicyInput, RateLimitOptions } from '@sluice/core';
import {
  LIMITER_OPTION_NAMES,
  OPTION_DEFAULTS,
  optionNames,
  RateLimitOptionsError,
} from '@sluice/core/adapter';

/**
 * The request object the guard sees: Express's `Request` on the Express platform,
 * Fastify's `FastifyRequest` on the Fastify platform. Both have these members.
 */
export interface RateLimitRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly ip?: string;
  [key: string]: unknown;
}

/**
 * Options of `RateLimitModule.forRoot()`: the options every adapter shares and those of
 * `createLimiter()` (both from core's option schema), with the module's own `policies` and
 * `defaultPolicies`.
 */
export type RateLimitModuleOptions = Omit<RateLimitOptions<RateLimitRequest>, 'policies' | 'limit'> &
  Omit<LimiterOptions, 'policies'> & {
    /**
     * Shorthand with `window`: one module policy named `default`, `limit` requests per `window`;
     * or a function of the request choosing the limit per request (each limit compiled once).
     */
    limit?: number | ((req: RateLimitRequest) => number | Promise<number>);
    /**
     * The module's policies; `@RateLimit('name')` selects among them. Give these, or the
     * `limit` + `window` shorthand, or a `limiter`.
     */
    policies?: readonly PolicyInput[];
    /**
     * Names of the policies applied to routes without `@RateLimit()`. Default: every policy
     * of the module. `[]` limits only decorated routes.
     */
    defaultPolicies?: readonly string[] | PolicyNamesOf<RateLimitRequest>;
  };

/** Names of module policies chosen per request (sync or async), e.g. by the tenant's plan. */
export type PolicyNamesOf<Req> = (req: Req) => readonly string[] | Promise<readonly string[]>;

/**
 * Options of `@RateLimit({...})`: either `policies` (names of module policies) or a policy of
 * the route's own (`limit` + `window` or `rate`, optionally `algorithm`, `burst`, `failMode`,
 * `scope`, `name`), not both; `cost` and `shadow` with either. The shared fields come from
 * core's option schema.
 */
export type RateLimitRouteOptions = Pick<
  RateLimitModuleOptions,
  | 'cost'
  | 'shadow'
  | 'window'
  | 'algorithm'
  | 'failMode'
  | 'denyList'
  | 'settle'
  | 'skipFailedRequests'
  | 'skipSuccessfulRequests'
  | 'requestWasSuccessful'
> & {
  /**
   * Limit of the route's own policy, or a function of the request choosing it per request (sync
   * or async; each limit compiled once).
   */
  limit?: number | ((req: RateLimitRequest) => number | Promise<number>);
  /**
   * Names of module policies to apply here (instead of the module's `defaultPolicies`), or a
   * function of the request choosing them per request (sync or async).
   */
  policies?: readonly string[] | PolicyNamesOf<RateLimitRequest>;
  /** Rate of the route's own policy (`'10/s'`), instead of `limit` + `window`. */
  rate?: PolicyInput['rate'];
  /** Bucket capacity of the route's own token-bucket or GCRA policy. */
  burst?: number;
  /** Scope of the route's own policy; default `'route'`: one budget per route. */
  scope?: PolicyInput['scope'];
  /** Name of the route's own policy; default `<Controller>.<handler>`, or `<Controller>` on a controller. */
  name?: string;
};

/**
 * Every option name `forRoot()` takes (the schema's `nestjs-module` options, the module
 * extras such as `isGlobal` aside: Nest takes those off before the options reach the module).
 */
export const NEST_MODULE_OPTION_NAMES: readonly string[] = Object.freeze(
  optionNames('nestjs-module').filter((name) => name !== 'isGlobal'),
);

/** Limiter options that go to `createLimiter()` as they are (`prefix`, `timeoutMs`, `clock`...). */
const PASSED_TO_LIMITER = LIMITER_OPTION_NAMES.filter((name) => name !== 'policies' && name !== 'store');

/** The module options that go to `createLimiter()` as they are (`prefix`, `timeoutMs`, `clock`...). */
export function limiterOptionsOf(
  options: RateLimitModuleOptions,
): Omit<LimiterOptions, 'policies' | 'store'> {
  const picked: Record<string, unknown> = {};
  for (const name of PASSED_TO_LIMITER) {
    const value = (options as Record<string, unknown>)[name];
    if (value !== undefined) picked[name] = value;
  }
  return picked as Omit<LimiterOptions, 'policies' | 'store'>;
}

/** Extra options of `forRoot()` / `forRootAsync()` that shape the module itself. */
export interface RateLimitModuleExtras {
  /** Register the module globally, so `RateLimitGuard` resolves in every module. Default true. */
  isGlobal?: boolean;
}

const built = new ConfigurableModuleBuilder<RateLimitModuleOptions>({ moduleName: 'RateLimit' })
  .setClassMethodName('forRoot')
  .setExtras<RateLimitModuleExtras>({ isGlobal: OPTION_DEFAULTS.isGlobal }, (definition, extras) => ({
    ...definition,
    global: extras.isGlobal ?? OPTION_DEFAULTS.isGlobal,
  }))
  .build();

/** The base class `RateLimitModule` extends: provides `forRoot()` and `forRootAsync()`. */
export const ConfigurableRateLimitModule = built.ConfigurableModuleClass;

/** Injection token of the module options: `@Inject(RATE_LIMIT_MODULE_OPTIONS)`. */
export const RATE_LIMIT_MODULE_OPTIONS = built.MODULE_OPTIONS_TOKEN;

/** Type of the argument of `RateLimitModule.forRoot()`. */
export type RateLimitModuleForRootOptions = typeof built.OPTIONS_TYPE;

/** Type of the argument of `RateLimitModule.forRootAsync()`. */
export type RateLimitModuleAsyncOptions = typeof built.ASYNC_OPTIONS_TYPE;

/**
 * The module's `requestWasSuccessful` serves the routes that skip (`skipFailedRequests` or
 * `skipSuccessfulRequests`, on the module or a route): when no route does, it decides nothing.
 *
 * @throws RateLimitOptionsError naming `requestWasSuccessful`
 */
export function checkSuccessDecided(options: RateLimitModuleOptions, someRouteSkips: boolean): void {
  const { requestWasSuccessful } = options;
  if (requestWasSuccessful === undefined || someRouteSkips) return;
  throw new RateLimitOptionsError(
    'requestWasSuccessful',
    requestWasSuccessful,
    'needs "skipFailedRequests" or "skipSuccessfulRequests" on the module or a route (alone it decides nothing)',
    'RateLimitModule',
  );
}
