/**
 * The option schema: every option of `createLimiter()`, the adapters and the Nest module and
 * decorator, once (default, check, doc line, who takes it), and what is derived from it: the
 * option types and the name lists the "did you mean" check reads.
 */
import type { PolicyInput } from '../types.js';
import { FRAMEWORK_OPTIONS } from './framework-options.js';
import { HTTP_OPTIONS } from './http-options.js';
import { LIMITER_OPTIONS } from './limiter-options.js';
import { namesFor, type OptionSpec, type OptionSurface, type OptionsOf } from './option.js';

export { OPTION_DEFAULTS } from './defaults.js';
export { checkFrameworkOptions, FRAMEWORK_OPTIONS } from './framework-options.js';
export { type CostValue, HTTP_OPTIONS } from './http-options.js';
export { type BreakerSettings, type DenyCacheSettings, LIMITER_OPTIONS } from './limiter-options.js';
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

/** Every option, each once: the shared HTTP options, `createLimiter()`'s own, the frameworks' own. */
export const OPTION_SCHEMA: Readonly<Record<string, OptionSpec<unknown>>> = Object.freeze({
  ...HTTP_OPTIONS,
  ...LIMITER_OPTIONS,
  ...FRAMEWORK_OPTIONS,
});

/** The names of every option `surface` takes, in schema order (the order of the README tables). */
export function optionNames(surface: OptionSurface): readonly string[] {
  return Object.freeze(namesFor(OPTION_SCHEMA, surface));
}

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
