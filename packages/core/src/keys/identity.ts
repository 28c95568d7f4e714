/**
 * Identity kinds: where an identity came from. Each kind is its own namespace in the key
 * layout, so no value of one kind ever meets a value of another: an API key spelled
 * `127.0.0.1` is not the client 127.0.0.1, and an application id spelled like an API key
 * is neither.
 */
import { describeValue } from '../policy/errors.js';
import type { IdentityInput, IdentityKind } from '../types.js';

/** Every identity kind, in the order the key layout documents them. */
export const IDENTITY_KINDS: readonly IdentityKind[] = Object.freeze(['ip', 'key', 'app']);

/** True when `value` is a string or an `Identity` of a known kind with a string value. */
export function isIdentityInput(value: unknown): value is IdentityInput {
  if (typeof value === 'string') return true;
  if (typeof value !== 'object' || value === null) return false;
  const { kind, value: text } = value as { kind?: unknown; value?: unknown };
  return (kind === 'ip' || kind === 'key' || kind === 'app') && typeof text === 'string';
}

/**
 * Why `value` is not an identity, for an error message naming `label`
 * (`limiter.check: "identity" must be ...`).
 */
export function identityProblem(label: string, value: unknown): string {
  return (
    `${label} must be a string or { kind: ${IDENTITY_KINDS.map((k) => `'${k}'`).join(' | ')}, value: string }, ` +
    `got ${describeValue(value)}`
  );
}
