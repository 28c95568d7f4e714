/** The error every invalid adapter option throws, at construction. */

import { OPTIONS_ERROR_BRAND } from '../error-brands.js';
import { describeValue } from '../policy/errors.js';

/**
 * An adapter option is invalid. Thrown by `resolveRateLimitOptions` when the middleware,
 * guard or module is built, never on the request path. The message names the option and
 * the value: `rateLimit: "limit" must be a positive integer, got -1`. Every adapter throws
 * this one class (code `INVALID_OPTIONS`); check `error.code === 'INVALID_OPTIONS'` where
 * two copies of core may be loaded (ESM and CommonJS), as `instanceof` sees only one.
 */
export class RateLimitOptionsError extends TypeError {
  /** The brand `isRateLimitOptionsError` reads: it holds across copies of the package, `instanceof` does not. */
  get [OPTIONS_ERROR_BRAND](): true {
    return true;
  }

  /** Stable machine-readable code. */
  readonly code = 'INVALID_OPTIONS' as const;
  /** The offending option (`limit`, `headers`, `policies`, ...). */
  readonly option: string;
  /** The offending value as given. */
  readonly value: unknown;
  /** What the option must be (`must be a positive integer`), without the prefix and value. */
  readonly requirement: string;

  /**
   * @param option the offending option
   * @param value the offending value
   * @param requirement what it must be, e.g. `must be a positive integer`
   * @param source what was being built, the message's prefix: `rateLimit` (default),
   *   `RateLimitModule`, `@RateLimit()`
   */
  constructor(option: string, value: unknown, requirement: string, source = 'rateLimit') {
    super(`${source}: "${option}" ${requirement}, got ${describeValue(value)}`);
    this.name = 'RateLimitOptionsError';
    this.option = option;
    this.value = value;
    this.requirement = requirement;
  }

  /** The same error told by another source (`@RateLimit() on PaymentsController.create`). */
  from(source: string): RateLimitOptionsError {
    return new RateLimitOptionsError(this.option, this.value, this.requirement, source);
  }
}
