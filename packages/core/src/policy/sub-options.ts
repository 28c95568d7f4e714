/** Checks shared by a policy's nested options (`ban`, `lease`, `local`): an object, of known fields only. */
import { PolicyError } from './errors.js';

/** Whether `value` is a plain object (not null, not an array). */
export function plainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Throws for the first field of `value` not in `known`, naming it by its path (`lease.size`).
 *
 * @param path the option's path in the policy (`'ban'`, `'ban.escalation'`, `'lease'`)
 * @param policy the policy's name, for the message
 */
export function checkFields(
  value: Record<string, unknown>,
  known: readonly string[],
  path: string,
  policy: string,
): void {
  for (const field of Object.keys(value)) {
    if (!known.includes(field)) {
      throw new PolicyError(
        `${path}.${field}`,
        value[field],
        `is not a field of ${path} (known: ${known.join(', ')})`,
        policy,
      );
    }
  }
}
