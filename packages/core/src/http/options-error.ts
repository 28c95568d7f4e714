/** The error every invalid adapter option throws, at construction. */

import { OPTIONS_ERROR_BRAND } from '../error-brands.js';
import { describeValue } from '../policy/errors.js';

/**
 * An adapter option is invalid. Thrown by `resolveRateLimitOptions` when the middleware,
 * guard or module is built, never on the request path. The message names the option and
 * the value: `rateLimit: "limit" must be a positive integer, got -1`.
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

  /**
   * @param option the offending option
   * @param value the offending value
   * @param requirement what it must be, e.g. `must be a positive integer`
   */
  constructor(option: string, value: unknown, requirement: string) {
    super(`rateLimit: "${option}" ${requirement}, got ${describeValue(value)}`);
    this.name = 'RateLimitOptionsError';
    this.option = option;
    this.value = value;
  }
}
