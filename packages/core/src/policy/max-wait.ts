/** A policy's `maxWaitMs` (waiting for a turn instead of a denial): validated and compiled. */
import { WAITING_ALGORITHMS } from '../algorithms/registry.js';
import type { Algorithm, PolicyInput } from '../types.js';
import { parseDuration } from './duration.js';
import { PolicyError } from './errors.js';

/** The longest a policy, or one check (`descriptor.maxWaitMs`), may let a request wait for its turn: one hour, in ms. */
export const MAX_WAIT_MS_MOST = 3_600_000;

/** What a `maxWaitMs` past {@link MAX_WAIT_MS_MOST} is told, in a policy's error and a check's alike. */
export const MAX_WAIT_MS_RULE = `must be at most one hour (${MAX_WAIT_MS_MOST} ms)`;

/** The waiting algorithms as prose: `token-bucket and gcra`. */
const WAITING = WAITING_ALGORITHMS.join(' and ');

/**
 * A policy's `maxWaitMs` in whole ms, or undefined when it does not wait (unset or 0). A turn is
 * reserved in the store, so only an algorithm that reserves one (`WAITING_ALGORITHMS`) takes it,
 * and neither a lease nor a local stage (both admit in-process, where no turn is reserved).
 *
 * @param input the policy as written
 * @param algorithm its algorithm
 * @param name its name, for errors
 * @throws PolicyError naming `maxWaitMs`, its value and what to do instead
 */
export function compileMaxWait(input: PolicyInput, algorithm: Algorithm, name: string): number | undefined {
  const { maxWaitMs } = input;
  if (maxWaitMs === undefined || maxWaitMs === 0) return undefined;
  const ms = parseDuration(maxWaitMs, 'maxWaitMs', name);
  if (ms > MAX_WAIT_MS_MOST) {
    throw new PolicyError('maxWaitMs', maxWaitMs, MAX_WAIT_MS_RULE, name);
  }
  if (!(WAITING_ALGORITHMS as readonly string[]).includes(algorithm)) {
    throw new PolicyError(
      'maxWaitMs',
      maxWaitMs,
      `works with ${WAITING} (they reserve a turn); policy ${JSON.stringify(name)} uses ${algorithm}: use ${WAITING.replace(' and ', ' or ')} to wait`,
      name,
    );
  }
  for (const field of ['lease', 'local'] as const) {
    if (input[field] !== undefined) {
      throw new PolicyError(
        'maxWaitMs',
        maxWaitMs,
        `cannot be combined with "${field}" (it admits in-process, where no turn is reserved; drop "maxWaitMs" or "${field}")`,
        name,
      );
    }
  }
  return ms;
}
