/**
 * The option schema: every option of `createLimiter()`, the adapters and the Nest module and
 * decorator, once (default, check, doc line, who takes it), and what is derived from it: the
 * option types and the name lists the "did you mean" check reads.
 */
import type { PolicyInput } from '../types.js';
import { HTTP_OPTIONS } from './http-options.js';
import type { LIMITER_OPTIONS } from './limiter-options.js';
import type { OptionsOf } from './option.js';
import type { PolicyNamesOf } from './route-options.js';
import { optionNames } from './schema.js';

export { OPTION_DEFAULTS } from './defaults.js';
export { checkFrameworkOptions, FRAMEWORK_OPTIONS } from './framework-options.js';
export { type CostValue, HTTP_OPTIONS } from './http-options.js';
export { type BreakerSettings, type DenyCacheSettings, LIMITER_OPTIONS } from './limiter-options.js';
export {
  checkModuleOptions,
  checkOwnPolicyStore,
  checkSuccessDecided,
  limiterOptionsOf,
  NEST_MODULE_OPTION_NAMES,
} from './module-options.js';
export {
  type BindRequest,
  checkOption,
  MIDDLEWARE,
  type OptionFail,
  type OptionSpec,
  type OptionSurface,
  type OptionsOf,
  option,
  type RequestOf,
} from './option.js';
export { routePolicyNames, routeRequestOptions } from './route-handler-options.js';
export {
  type PolicyNamesOf,
  policyNameList,
  type RouteLimit,
  routeLimit,
  SETTLE_OPTION_NAMES,
} from './route-options.js';
export { OPTION_SCHEMA, optionNames } from './schema.js';

/** Options shared by every adapter (`rateLimit()` of Express, Koa and Hono; the Nest module's HTTP part). */
export type RateLimitOptions<Req> = OptionsOf<typeof HTTP_OPTIONS, Req>;

/** Options of `createLimiter`. */
export type LimiterOptions = OptionsOf<Pick<typeof HTTP_OPTIONS, 'store' | 'prefix'>> &
  OptionsOf<typeof LIMITER_OPTIONS> & {
    /** The policies this limiter can apply; names must be unique. */
    policies: readonly PolicyInput[];
  };

/** The options every adapter shares (`RateLimitOptions`), in the order the READMEs list them. */
export const ADAPTER_OPTION_NAMES = Object.freeze(
  Object.keys(HTTP_OPTIONS) as (keyof typeof HTTP_OPTIONS)[],
) as readonly (keyof typeof HTTP_OPTIONS)[];

/** The options of `createLimiter()` (`LimiterOptions`). */
export const LIMITER_OPTION_NAMES = optionNames('createLimiter') as readonly (keyof LimiterOptions)[];

/**
 * Options of the Nest module (`RateLimitModule.forRoot()`): the options every adapter shares and those of
 * `createLimiter()` (both from core's option schema), with the module's own `policies` and
 * `defaultPolicies`.
 */
export type ModuleOptions<Req> = Omit<RateLimitOptions<Req>, 'policies' | 'limit'> &
  Omit<LimiterOptions, 'policies'> & {
    /**
     * Shorthand with `window`: one module policy named `default`, `limit` requests per `window`;
     * or a function of the request choosing the limit per request (each limit compiled once).
     */
    limit?: number | ((req: Req) => number | Promise<number>);
    /**
     * The module's policies; `@RateLimit('name')` selects among them. Give these, or the
     * `limit` + `window` shorthand, or a `limiter`.
     */
    policies?: readonly PolicyInput[];
    /**
     * Names of the policies applied to routes without `@RateLimit()`. Default: every policy
     * of the module. `[]` limits only decorated routes.
     */
    defaultPolicies?: readonly string[] | PolicyNamesOf<Req>;
  };

/**
 * Options of a route's own limit (Nest's `@RateLimit({...})`): either `policies` (names of module policies) or a policy of
 * the route's own (`limit` + `window` or `rate`, optionally `algorithm`, `burst`, `failMode`,
 * `scope`, `name`), not both; `cost` and `shadow` with either. The shared fields come from
 * core's option schema.
 */
export type RouteOptions<Req> = Pick<
  ModuleOptions<Req>,
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
  limit?: number | ((req: Req) => number | Promise<number>);
  /**
   * Names of module policies to apply here (instead of the module's `defaultPolicies`), or a
   * function of the request choosing them per request (sync or async).
   */
  policies?: readonly string[] | PolicyNamesOf<Req>;
  /** Rate of the route's own policy (`'10/s'`), instead of `limit` + `window`. */
  rate?: PolicyInput['rate'];
  /** Bucket capacity of the route's own token-bucket or GCRA policy. */
  burst?: number;
  /** Scope of the route's own policy; default `'route'`: one budget per route. */
  scope?: PolicyInput['scope'];
  /** Name of the route's own policy; default `<Controller>.<handler>`, or `<Controller>` on a controller. */
  name?: string;
};
