/** `Retry-After` in whole seconds for a denied decision. */
import type { Decision, PolicyResult } from '../types.js';

/**
 * The enforced policies that denied this request (`over_limit`, not shadow), in the
 * limiter's order. Empty for allowed and unavailable decisions.
 */
export function denyingResults(decision: Decision): PolicyResult[] {
  return decision.results.filter((r) => !r.allowed && !r.shadow && r.outcome === 'over_limit');
}

/**
 * The denying policy with the longest wait (the first on a tie), or undefined when no
 * enforced policy denied. Falls back to `decision.policy` for an over-limit decision that
 * carries no per-policy results.
 */
export function longestWaitPolicy(decision: Decision): string | undefined {
  let best: PolicyResult | undefined;
  for (const r of denyingResults(decision)) {
    if (best === undefined || r.retryAfterMs > best.retryAfterMs) best = r;
  }
  if (best !== undefined) return best.policy;
  return decision.outcome === 'over_limit' ? decision.policy : undefined;
}

/**
 * Seconds a denied client should wait: the longest `retryAfterMs` among the denying
 * policies (or the decision's own when no result denies), rounded up to whole
 * seconds, at least 1. This is the `Retry-After` value and `retry_after_seconds` in the
 * problem body.
 */
export function retryAfterSeconds(decision: Decision): number {
  const denying = denyingResults(decision);
  let ms = denying.length === 0 ? decision.retryAfterMs : 0;
  for (const r of denying) ms = Math.max(ms, r.retryAfterMs);
  if (!Number.isFinite(ms) || ms <= 0) return 1;
  return Math.max(1, Math.ceil(ms / 1000));
}
