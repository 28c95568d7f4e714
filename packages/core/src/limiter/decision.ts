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

/**
 * The Decision for results that all came from one source. The lead result: the denying enforced
 * policy with the longest wait (an unavailable closed policy beats a real limit); when every
 * enforced one allows, the enforced policy with the fewest units left (any policy when all are
 * shadow). One pass, no array built.
 */
export function buildDecision(results: readonly PolicyResult[], source: DecisionSource): Decision {
  let denyingLead: PolicyResult | undefined;
  let enforcedLead: PolicyResult | undefined;
  let anyLead: PolicyResult | undefined;
  let shadowed = false;
  let enforcedUnavailable = false;
  for (let i = 0; i < results.length; i++) {
    const r = results[i] as PolicyResult;
    if (anyLead === undefined || r.remaining < anyLead.remaining) anyLead = r;
    if (r.shadow) {
      if (!r.allowed) shadowed = true;
      continue;
    }
    if (r.outcome === 'unavailable') enforcedUnavailable = true;
    if (enforcedLead === undefined || r.remaining < enforcedLead.remaining) enforcedLead = r;
    if (
      !r.allowed &&
      (denyingLead === undefined ||
        (r.outcome === 'unavailable' && denyingLead.outcome !== 'unavailable') ||
        (r.outcome === denyingLead.outcome && r.retryAfterMs > denyingLead.retryAfterMs))
    ) {
      denyingLead = r;
    }
  }
  const allowed = denyingLead === undefined;
  const lead = denyingLead ?? enforcedLead ?? anyLead;
  let outcome: Outcome;
  if (!allowed) outcome = lead?.outcome === 'unavailable' ? 'unavailable' : 'over_limit';
  else outcome = enforcedUnavailable ? 'unavailable' : 'allowed';
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
