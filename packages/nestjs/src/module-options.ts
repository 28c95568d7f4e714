/** The options of `RateLimitModule.forRoot()` / `forRootAsync()`, and the module builder. */
import { ConfigurableModuleBuilder } from '@nestjs/common';
import {
  type LimiterOptions,
  OPTION_DEFAULTS,
  type PolicyInput,
  type PolicyNamesOf,
  type RateLimitOptions,
} from '@sluice/core';

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

export { NEST_MODULE_OPTION_NAMES } from '@sluice/core';

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
