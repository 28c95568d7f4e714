/** A concurrency policy's own fields (`algorithm: 'concurrency'`): checked and compiled by `definePolicy`. */
import { concurrency } from '../algorithms/concurrency.js';
import type { CompiledLimits } from '../algorithms/module.js';
import { OPTION_DEFAULTS } from '../options/defaults.js';
import type { PolicyInput } from '../types.js';
import { parseDuration } from './duration.js';
import { PolicyError } from './errors.js';
import { isPositiveInteger } from './positive-integer.js';

/** The shortest slot lease: a slot renews well before it runs out, and a renewal needs a round trip. */
export const MIN_CONCURRENCY_LEASE_MS = 100;

/** The fields a concurrency policy refuses, and why. */
const REFUSED: readonly (readonly [keyof PolicyInput, string])[] = [
  ['window', 'a concurrency policy limits requests in flight, not per window: give "limit" and "leaseMs"'],
  ['rate', 'a concurrency policy limits requests in flight, not a rate: give "limit" and "leaseMs"'],
  ['burst', 'a concurrency policy has no burst: "limit" is the most requests in flight'],
  ['lease', 'slots cannot be leased to an instance: every slot is taken and freed in the store'],
  ['local', 'a local stage counts a rate, a concurrency policy counts requests in flight'],
  ['ban', 'a concurrency denial ends when a request does, it is no violation to ban for'],
  ['maxWaitMs', 'works with token-bucket and gcra (they reserve a turn); a slot has no turn to reserve'],
];

/**
 * Throws for a field a concurrency policy refuses (`window`, `rate`, `burst`, `lease`, `local`,
 * `ban`, `maxWaitMs`), naming it and why; checked before the list of known fields, so a field of
 * another policy kind gets its reason.
 */
export function refuseConcurrencyFields(p: PolicyInput, name: string): void {
  for (const [field, why] of REFUSED) {
    if (p[field] !== undefined) {
      throw new PolicyError(field, p[field], `is not for a concurrency policy (${why})`, name);
    }
  }
}

/**
 * Checks a concurrency policy's own fields and compiles them: `limit` (a positive integer, the most
 * requests in flight at once) and `leaseMs` (a duration of at least `MIN_CONCURRENCY_LEASE_MS`,
 * default `OPTION_DEFAULTS.concurrencyLeaseMs`) to limit, windowMs = intervalMs = leaseMs. A
 * `cost` other than 1 and the rate fields are refused.
 *
 * @throws PolicyError naming the field, the value and why
 */
export function compileConcurrencyLimits(p: PolicyInput, name: string): CompiledLimits {
  refuseConcurrencyFields(p, name);
  if (p.failMode === 'lease') {
    throw new PolicyError(
      'failMode',
      p.failMode,
      "is for a policy with a lease; a concurrency policy takes 'closed', 'open' or 'local'",
      name,
    );
  }
  if (p.cost !== undefined && p.cost !== 1) {
    throw new PolicyError(
      'cost',
      p.cost,
      'must be 1 for a concurrency policy (a request holds one slot)',
      name,
    );
  }
  if (p.limit === undefined) {
    throw new PolicyError('limit', p.limit, 'is required (the most requests in flight at once)', name);
  }
  if (!isPositiveInteger(p.limit)) {
    throw new PolicyError('limit', p.limit, 'must be a positive integer', name);
  }
  const leaseMs = parseDuration(p.leaseMs ?? OPTION_DEFAULTS.concurrencyLeaseMs, 'leaseMs', name);
  if (leaseMs < MIN_CONCURRENCY_LEASE_MS) {
    throw new PolicyError(
      'leaseMs',
      p.leaseMs,
      `must be at least ${MIN_CONCURRENCY_LEASE_MS} ms (a slot must outlive a renewal's round trip)`,
      name,
    );
  }
  return concurrency.limits.compile(p.limit, leaseMs, undefined);
}

/** Throws when a policy of another algorithm gives `leaseMs` (a concurrency policy's field). */
export function refuseLeaseMs(p: PolicyInput, algorithm: string, name: string): void {
  if (p.leaseMs !== undefined) {
    throw new PolicyError(
      'leaseMs',
      p.leaseMs,
      `is for concurrency policies (algorithm 'concurrency'); policy uses ${algorithm}`,
      name,
    );
  }
}
