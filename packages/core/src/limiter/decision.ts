/**
 * The decision, one step: per-policy results turned into a Decision and a DecisionEvent, by the
 * fail modes (each policy's result) when the store could not decide, and the check's span.
 *
 * Traces of limiter checks through `@opentelemetry/api` only: one span per `limiter.check`, a
 * child of the active span (the request's), with the store call as an event. Attributes are policy
 * names, the outcome, the decision source and the store kind: never an identity, a key or a path.
 * Redis commands themselves are left to the Redis client's own instrumentation.
 * Without a registered SDK nothing is started or allocated: the check asks the global provider
 * for a delegate tracer, finds none, and goes on.
 */

import {
  ProxyTracerProvider,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import { fallbackFailMode } from '../policy/lease.js';
import type {
  CompiledPolicy,
  Decision,
  DecisionEvent,
  DecisionSource,
  MetricOutcome,
  Outcome,
  PolicyResult,
  StoreEntry,
  StoreVerdict,
} from '../types.js';
import { storeErrorCauseOf } from './counters.js';
import { type StoreAnswer, StoreUnavailable } from './store-answer.js';

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

/** Per-policy results and where they came from. */
export interface SourcedResults {
  readonly results: PolicyResult[];
  readonly source: DecisionSource;
}

/** An enforced (non-shadow) `closed` policy applies: the check is denied, nothing may be charged. */
export function failsClosed(entries: readonly StoreEntry[]): boolean {
  return entries.some((e) => !e.policy.shadow && fallbackFailMode(e.policy) === 'closed');
}

/**
 * Each entry's result by its policy's fail mode: `open` admits and `closed` denies, both as
 * `unavailable`; `local` takes the local fallback's verdict, and denies as `unavailable` when
 * there is none (even the in-process limiter failed). The source is `fail-closed` when an
 * enforced closed policy applies, else `local` when a local one does, else `fail-open`.
 * A `lease` policy takes its lease's verdict when it had live units, and otherwise fails as its
 * `lease.failModeAfter` says (source `lease` when leases answered and nothing failed closed or local).
 */
export function applyFailModes(
  entries: readonly StoreEntry[],
  unavailable: StoreUnavailable,
): SourcedResults {
  let hasLocal = false;
  let hasLease = false;
  let closed = false;
  const results = entries.map((e, i) => {
    const { policy, cost } = e;
    const verdict = unavailable.localVerdicts?.[i];
    if (policy.failMode === 'lease' && verdict !== undefined) {
      hasLease = true;
      return resultFromVerdict(policy, cost, verdict);
    }
    const mode = fallbackFailMode(policy);
    if (mode !== 'local') {
      if (mode === 'closed' && !policy.shadow) closed = true;
      return unavailableResult(policy, cost, mode === 'open');
    }
    hasLocal = true;
    return verdict === undefined
      ? unavailableResult(policy, cost, false)
      : resultFromVerdict(policy, cost, verdict);
  });
  const source: DecisionSource = closed
    ? 'fail-closed'
    : hasLocal
      ? 'local'
      : hasLease
        ? 'lease'
        : 'fail-open';
  return { results, source };
}

/** The tracer's name (the instrumentation scope). */
export const TRACER_NAME = '@sluice/core';

/** The name of the span of one check. */
export const CHECK_SPAN_NAME = 'sluice.check';

/** The name of the event for the store call of a check. */
export const STORE_CALL_EVENT = 'sluice.store.call';

/** The tracer of a registered SDK; undefined when none is registered (the no-op proxy). */
function registeredTracer(): Tracer | undefined {
  const provider = trace.getTracerProvider();
  return provider instanceof ProxyTracerProvider
    ? provider.getDelegateTracer(TRACER_NAME)
    : provider.getTracer(TRACER_NAME);
}

/**
 * Starts the span of one check as a child of the active span, or returns undefined when no SDK
 * is registered. `storeKind` is the store's `kind` (`redis`, `memory`).
 */
export function startCheckSpan(entries: readonly StoreEntry[], storeKind: string): Span | undefined {
  const tracer = registeredTracer();
  if (tracer === undefined) return undefined;
  return tracer.startSpan(CHECK_SPAN_NAME, {
    kind: SpanKind.INTERNAL,
    attributes: { 'sluice.policies': entries.map((e) => e.policy.name), 'sluice.store': storeKind },
  });
}

/**
 * Ends a check's span: the decision's outcome, source, deciding policy and whether it was allowed;
 * an event for the store call (`sluice.store.result`: `ok`, `timeout`, `error`, `breaker_open`)
 * when the store was asked; status ERROR when the store could not decide.
 */
export function endCheckSpan(span: Span, decision: Decision, answer: StoreAnswer): void {
  if (answer instanceof StoreUnavailable) {
    const cause = storeErrorCauseOf(answer.cause);
    span.addEvent(STORE_CALL_EVENT, { 'sluice.store.result': cause });
    span.setStatus({ code: SpanStatusCode.ERROR, message: `store unavailable: ${cause}` });
  } else if (answer.source === 'store') {
    span.addEvent(STORE_CALL_EVENT, { 'sluice.store.result': 'ok' });
  }
  span.setAttributes({
    'sluice.outcome': decision.outcome,
    'sluice.decision.source': decision.source,
    'sluice.allowed': decision.allowed,
    'sluice.shadowed': decision.shadowed,
  });
  if (decision.policy !== undefined) span.setAttribute('sluice.policy', decision.policy);
  span.end();
}
