/** The error every invalid policy or limiter option throws at construction. */
import { POLICY_ERROR_BRAND } from '../error-brands.js';

/** Renders a value for an error message: strings quoted, NaN/Infinity spelled out, objects summarized. */
export function describeValue(value: unknown): string {
  if (typeof value === 'string')
    return JSON.stringify(value.length > 80 ? `${value.slice(0, 77)}...` : value);
  if (typeof value === 'number') return Number.isNaN(value) ? 'NaN' : String(value);
  if (typeof value === 'bigint') return `${value}n`;
  if (value === null) return 'null';
  if (value === undefined) return 'undefined';
  if (typeof value === 'function') return 'a function';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  return String(value);
}

/**
 * A policy (or the options that carry it) is invalid. Thrown when the policy is built,
 * never on the request path. The message names the policy, the field and the value:
 * `policy "burst": "limit" must be a positive integer, got -1`.
 */
export class PolicyError extends Error {
  /** The brand `isPolicyError` reads: it holds across copies of the package, `instanceof` does not. */
  get [POLICY_ERROR_BRAND](): true {
    return true;
  }

  /** Stable machine-readable code. */
  readonly code = 'INVALID_POLICY' as const;
  /** The offending field (`limit`, `window`, `rate`, `name`, ...). */
  readonly field: string;
  /** The offending value as given. */
  readonly value: unknown;
  /** The policy's name when known. */
  readonly policy: string | undefined;

  /**
   * @param field the offending field
   * @param value the offending value
   * @param requirement what the field must be, e.g. `must be a positive integer`
   * @param policy the policy's name, when known
   */
  constructor(field: string, value: unknown, requirement: string, policy?: string) {
    const where = policy === undefined ? '' : `policy ${JSON.stringify(policy)}: `;
    super(`${where}"${field}" ${requirement}, got ${describeValue(value)}`);
    this.name = 'PolicyError';
    this.field = field;
    this.value = value;
    this.policy = policy;
  }
}
