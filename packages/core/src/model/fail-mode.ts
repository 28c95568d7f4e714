/** A policy's fail mode: its own file, so the policy modules it names (policy/lease.ts) can read it. */

/**
 * What a policy does when the store cannot decide (timeout, connection error, open breaker):
 * - `closed`: deny with 503 (outcome `unavailable`, not `over_limit`).
 * - `open`: admit, counted and reported as `fail_open`.
 * - `local`: decide from an in-process fallback limiter until the store answers again.
 * - `lease`: a leased policy keeps admitting from its current lease until the lease is spent or
 *   expired, then fails as its `lease.failModeAfter` says (default `closed`).
 */
export type FailMode = 'closed' | 'open' | 'local' | 'lease';
