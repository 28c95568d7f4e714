/** The option schema as one table, and the option names each surface takes. */
import { FRAMEWORK_OPTIONS } from './framework-options.js';
import { HTTP_OPTIONS } from './http-options.js';
import { LIMITER_OPTIONS } from './limiter-options.js';
import { namesFor, type OptionSpec, type OptionSurface } from './option.js';

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
