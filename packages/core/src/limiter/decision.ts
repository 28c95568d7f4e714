/** Turning per-policy results into a Decision and a DecisionEvent. */
import type {
  CompiledPolicy,
  Decision,
  DecisionEvent,
  DecisionSource,
  MetricOutcome,
  Outcome,
  PolicyResult,
  StoreVerdict,
} from '../types.js';

/** A policy's result from a store verdict. Remaining is whole units in [0, limit]. */
export function resultFromVerdict(policy: CompiledPolicy, cost: number, verdict: StoreVerdict): PolicyResult {
  const remaining = Math.min(policy.limit, Math.max(0, Math.floor(verdict.remaining + 1e-9)));
  if (verdict.banned === true) return { ...resultOf(policy, cost, verdict, remaining), banned: true };
  return resultOf(policy, cost, verdict, remaining);
}

function resultOf(
  policy: CompiledPolicy,
  cost: number,
  verdict: StoreVerdict,
  remaining: number,
): PolicyResult {
  return {
    policy: policy.name,
    algorithm: policy.algorithm,
    allowed: verdict.allowed,
    outcome: verdict.allowed ? 'allowed' : 'over_limit',
    limit: policy.limit,
    windowMs: policy.windowMs,
    remaining,
    resetMs: Math.max(0, Math.ceil(verdict.resetMs)),
    retryAfterMs: verdict.allowed ? 0 : Math.max(0, Math.ceil(verdict.retryAfterMs)),
    cost,
    shadow: policy.shadow,
    failMode: policy.failMode,
  };
}

/**
 * A policy's result when the store could not decide and the policy fails `open` (admit) or
 * `closed` (deny). Outcome `unavailable`; nothing is known about remaining capacity.
 */
export function unavailableResult(policy: CompiledPolicy, cost: number, allowed: boolean): PolicyResult {
  return {
    policy: policy.name,
    algorithm: policy.algorithm,
    allowed,
    outcome: 'unavailable',
    limit: policy.limit,
    windowMs: policy.windowMs,
    remaining: 0,
    resetMs: 0,
    retryAfterMs: 0,
    cost,
    shadow: policy.shadow,
    failMode: policy.failMode,
  };
}

/** The Decision for results that all came from one source. */
export function buildDecision(results: readonly PolicyResult[], source: DecisionSource): Decision {
  const enforced = results.filter((r) => !r.shadow);
  const denying = enforced.filter((r) => !r.allowed);
  const allowed = denying.length === 0;
  const shadowed = results.some((r) => r.shadow && !r.allowed);
  let lead: PolicyResult | undefined;
  if (!allowed) {
    // The denying policy with the longest wait; an unavailable closed policy beats a real limit.
    for (const r of denying) {
      if (
        lead === undefined ||
        (r.outcome === 'unavailable' && lead.outcome !== 'unavailable') ||
        (r.outcome === lead.outcome && r.retryAfterMs > lead.retryAfterMs)
      ) {
        lead = r;
      }
    }
  } else {
    const pool = enforced.length > 0 ? enforced : results;
    for (const r of pool) {
      if (lead === undefined || r.remaining < lead.remaining) lead = r;
    }
  }
  let outcome: Outcome;
  if (!allowed) outcome = lead?.outcome === 'unavailable' ? 'unavailable' : 'over_limit';
  else outcome = enforced.some((r) => r.outcome === 'unavailable') ? 'unavailable' : 'allowed';
  return {
    allowed,
    outcome,
    policy: lead?.policy,
    limit: lead?.limit ?? 0,
    remaining: lead?.remaining ?? 0,
    resetMs: lead?.resetMs ?? 0,
    retryAfterMs: allowed ? 0 : (lead?.retryAfterMs ?? 0),
    shadowed,
    source,
    results,
  };
}

/** The metric outcome of one policy result. */
export function metricOutcome(result: PolicyResult): MetricOutcome {
  if (result.outcome === 'unavailable') return result.allowed ? 'fail_open' : 'fail_closed';
  if (result.allowed) return 'allowed';
  return result.shadow ? 'shadow_over_limit' : 'over_limit';
}

/** Admitted by the store with at most a fifth of the limit remaining (Envoy's near_limit ratio, 0.8 used). */
export function nearLimit(result: PolicyResult): boolean {
  return result.allowed && result.outcome === 'allowed' && result.remaining * 5 <= result.limit;
}

/** The event for one decision: no identity, key or route. */
export function decisionEvent(decision: Decision, durationMs: number): DecisionEvent {
  return {
    policy: decision.policy,
    outcome: decision.outcome,
    metricOutcomes: decision.results.map((r) => ({
      policy: r.policy,
      outcome: metricOutcome(r),
      nearLimit: nearLimit(r) ? true : undefined,
    })),
    allowed: decision.allowed,
    shadowed: decision.shadowed,
    source: decision.source,
    durationMs,
  };
}
