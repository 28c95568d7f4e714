/** Durations (`'1m'`, `'10s'`, `'500ms'`) and rates (`'100/s'`, `'5/10s'`). */
import { PolicyError } from './errors.js';
import { isPositiveInteger } from './positive-integer.js';

const UNIT_MS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1000,
  sec: 1000,
  m: 60_000,
  min: 60_000,
  h: 3_600_000,
  hr: 3_600_000,
  d: 86_400_000,
  day: 86_400_000,
};

const DURATION = /^(\d+(?:\.\d+)?)\s*(ms|s|sec|m|min|h|hr|d|day)?$/;
const DURATION_HINT =
  "must be a duration such as '500ms', '10s', '1m', '1h', '1d' or a number of milliseconds";

/** The longest duration accepted: 366 days. */
export const MAX_DURATION_MS = 366 * 86_400_000;

/**
 * Milliseconds in a duration: a positive number of milliseconds, or a string with a unit
 * (`'500ms'`, `'10s'`, `'1.5s'`, `'1m'`, `'1h'`, `'1d'`; a bare number string is milliseconds).
 * The result is a whole number of milliseconds between 1 and 366 days.
 *
 * @param input the duration
 * @param field the option being parsed, named in the error
 * @param policy the policy being built, named in the error
 * @throws PolicyError when the duration cannot be parsed or is out of range
 */
export function parseDuration(input: string | number, field: string, policy?: string): number {
  let ms: number;
  if (typeof input === 'number') {
    ms = input;
  } else if (typeof input === 'string') {
    const match = DURATION.exec(input.trim());
    if (!match) throw new PolicyError(field, input, DURATION_HINT, policy);
    ms = Number(match[1]) * (UNIT_MS[match[2] ?? 'ms'] ?? Number.NaN);
  } else {
    throw new PolicyError(field, input, DURATION_HINT, policy);
  }
  if (!Number.isFinite(ms) || ms <= 0) {
    throw new PolicyError(field, input, 'must be a positive, finite duration', policy);
  }
  if (!Number.isInteger(ms)) {
    throw new PolicyError(field, input, 'must be a whole number of milliseconds', policy);
  }
  if (ms > MAX_DURATION_MS) throw new PolicyError(field, input, 'must be at most 366 days', policy);
  return ms;
}

/** A parsed rate: `limit` units per `windowMs`. */
export interface ParsedRate {
  readonly limit: number;
  readonly windowMs: number;
}

const RATE = /^(\S+?)\s*\/\s*(\S+)$/;

/**
 * Parses a rate: `'100/s'`, `'5/10s'`, `'1000/1m'`, `'20/500ms'`, or `{ limit, window }`.
 *
 * @param input the rate
 * @param policy the policy being built, named in the error
 * @throws PolicyError when the rate cannot be parsed
 */
export function parseRate(
  input: string | { readonly limit: number; readonly window: string | number },
  policy?: string,
): ParsedRate {
  if (typeof input === 'string') {
    const match = RATE.exec(input.trim());
    if (!match) {
      throw new PolicyError('rate', input, "must look like '100/s', '5/10s' or '1000/1m'", policy);
    }
    const limit = Number(match[1]);
    if (!/^\d+$/.test(match[1] ?? '') || !Number.isSafeInteger(limit) || limit <= 0) {
      throw new PolicyError('rate', input, 'must start with a positive whole number of units', policy);
    }
    const unit = match[2] ?? '';
    // '100/s' means per one second: a bare unit counts as 1 of it.
    const windowText = /^[a-z]+$/.test(unit) ? `1${unit}` : unit;
    let windowMs: number;
    try {
      windowMs = parseDuration(windowText, 'rate', policy);
    } catch {
      throw new PolicyError('rate', input, "must end in a duration such as 's', '10s' or '1m'", policy);
    }
    return { limit, windowMs };
  }
  if (typeof input === 'object' && input !== null && !Array.isArray(input)) {
    const { limit, window } = input;
    if (!isPositiveInteger(limit)) {
      throw new PolicyError('rate.limit', limit, 'must be a positive integer', policy);
    }
    return { limit, windowMs: parseDuration(window, 'rate.window', policy) };
  }
  throw new PolicyError('rate', input, "must be a string such as '100/s' or { limit, window }", policy);
}
