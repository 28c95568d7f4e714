/** `Retry-After` in whole seconds for a denied decision. */
import type { Decision, PolicyResult } from '../types.js';

/**
 * The enforced policies that denied this request (`over_limit`, not shadow), in the
 * limiter's order. Empty for allowed and unavailable decisions.
 */
export function denyingResults(decision: Decision): PolicyResult[] {
  return decision.results.filter(isDenying);
}

/** The longest wait among the denying policies, and the policy that has it. */
export interface LongestDenial {
  /** The denying result with the longest `retryAfterMs` (the first on a tie). */
  readonly result: PolicyResult;
  /** The longest `retryAfterMs` among the denying results, at least 0. */
  readonly waitMs: number;
}

/**
 * One pass over the results: the denying policy with the longest wait and that wait, or
 * undefined when no enforced policy denied. `longestWaitPolicy`, `retryAfterSeconds` and the
 * 429 body all read it.
 */
export function longestDenial(decision: Decision): LongestDenial | undefined {
  const results = decision.results;
  let best: PolicyResult | undefined;
  let waitMs = 0;
  for (let i = 0; i < results.length; i++) {
    const r = results[i]!;
    if (!isDenying(r)) continue;
    waitMs = best === undefined ? Math.max(0, r.retryAfterMs) : Math.max(waitMs, r.retryAfterMs);
    if (best === undefined || r.retryAfterMs > best.retryAfterMs) best = r;
  }
  return best === undefined ? undefined : { result: best, waitMs };
}

/**
 * The denying policy with the longest wait (the first on a tie), or undefined when no
 * enforced policy denied. Falls back to `decision.policy` for an over-limit decision that
 * carries no per-policy results.
 */
export function longestWaitPolicy(decision: Decision): string | undefined {
  return policyOf(decision, longestDenial(decision));
}

/** The policy named for `denial`, or the decision's own for an over-limit decision without one. */
export function policyOf(decision: Decision, denial: LongestDenial | undefined): string | undefined {
  if (denial !== undefined) return denial.result.policy;
  return decision.outcome === 'over_limit' ? decision.policy : undefined;
}

/** True for an enforced policy that denied (`over_limit`, not shadow). */
export function isDenying(r: PolicyResult): boolean {
  return !r.allowed && !r.shadow && r.outcome === 'over_limit';
}

/** `Retry-After` seconds for a wait in milliseconds: rounded up, at least 1. */
export function waitSeconds(ms: number): number {
  if (!Number.isFinite(ms) || ms <= 0) return 1;
  return Math.max(1, Math.ceil(ms / 1000));
}

/**
 * Seconds a denied client should wait: the longest `retryAfterMs` among the denying
 * policies (or the decision's own when no result denies), rounded up to whole
 * seconds, at least 1. This is the `Retry-After` value and `retry_after_seconds` in the
 * problem body.
 */
export function retryAfterSeconds(decision: Decision): number {
  return waitSeconds(longestDenial(decision)?.waitMs ?? decision.retryAfterMs);
}
