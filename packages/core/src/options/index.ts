/**
 * The option schema: every option of `createLimiter()`, the adapters and the Nest module and
 * decorator, once (default, check, doc line, who takes it), and what is derived from it: the
 * option types and the name lists the "did you mean" check reads.
 */
import type { PolicyInput } from '../types.js';
import { HTTP_OPTIONS } from './http-options.js';
import type { LIMITER_OPTIONS } from './limiter-options.js';
import type { OptionsOf } from './option.js';
import { optionNames } from './schema.js';

export { OPTION_DEFAULTS } from './defaults.js';
export { checkFrameworkOptions, FRAMEWORK_OPTIONS } from './framework-options.js';
export { type CostValue, HTTP_OPTIONS } from './http-options.js';
export { type BreakerSettings, type DenyCacheSettings, LIMITER_OPTIONS } from './limiter-options.js';
export {
  checkModuleOptions,
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
