/**
 * Coded, one-time configuration warnings, in the style of express-rate-limit's validations:
 * each code is printed once per process (or isolate) through `console.warn`.
 */

/** The warning codes Sluice emits. Stable: match on them, not on the text. */
export const WARNING_CODES = {
  /** Trust proxy is set so broadly (`true`) that clients can choose their own IP. */
  PERMISSIVE_TRUST_PROXY: 'SLUICE_PERMISSIVE_TRUST_PROXY',
  /** A request had no usable client IP and no identity; it was limited under a shared identity. */
  NO_CLIENT_IP: 'SLUICE_NO_CLIENT_IP',
  /** `shadow: true` with a shared limiter: denies pass here, but the limiter still records them as over_limit. */
  SHADOW_WITH_SHARED_LIMITER: 'SLUICE_SHADOW_WITH_SHARED_LIMITER',
  /** Redis evicts any key when full (`maxmemory-policy` allkeys-*): live limits can be forgotten. */
  REDIS_ALLKEYS_EVICTION: 'SLUICE_REDIS_ALLKEYS_EVICTION',
} as const;

const emitted = new Set<string>();

/**
 * Prints `[code] message` with `console.warn` the first time `code` is seen, and nothing
 * after that. Never throws.
 *
 * @param code a stable code such as `SLUICE_PERMISSIVE_TRUST_PROXY`
 * @param message what is wrong and how to fix it; never include identities or keys
 * @returns true when the warning was printed now
 */
export function warnOnce(code: string, message: string): boolean {
  if (emitted.has(code)) return false;
  emitted.add(code);
  try {
    console.warn(`[${code}] ${message}`);
  } catch {
    // A console that throws must not break a request.
  }
  return true;
}

/** Forgets which codes were printed, so tests can assert a warning again. */
export function resetWarnings(): void {
  emitted.clear();
}
