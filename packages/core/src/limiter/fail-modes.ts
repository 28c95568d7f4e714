/** The fail modes: each policy's result when the store could not decide. */
import type { DecisionSource, PolicyResult, StoreEntry } from '../types.js';
import { resultFromVerdict, unavailableResult } from './decision.js';
import type { StoreUnavailable } from './store-answer.js';

/** Per-policy results and where they came from. */
export interface SourcedResults {
  readonly results: PolicyResult[];
  readonly source: DecisionSource;
}

/** An enforced (non-shadow) `closed` policy applies: the check is denied, nothing may be charged. */
export function failsClosed(entries: readonly StoreEntry[]): boolean {
  return entries.some((e) => !e.policy.shadow && e.policy.failMode === 'closed');
}

/**
 * Each entry's result by its policy's fail mode: `open` admits and `closed` denies, both as
 * `unavailable`; `local` takes the local fallback's verdict, and denies as `unavailable` when
 * there is none (even the in-process limiter failed). The source is `fail-closed` when an
 * enforced closed policy applies, else `local` when a local one does, else `fail-open`.
 */
export function applyFailModes(
  entries: readonly StoreEntry[],
  unavailable: StoreUnavailable,
): SourcedResults {
  let hasLocal = false;
  const results = entries.map((e, i) => {
    const { policy, cost } = e;
    if (policy.failMode !== 'local') return unavailableResult(policy, cost, policy.failMode === 'open');
    hasLocal = true;
    const verdict = unavailable.localVerdicts?.[i];
    return verdict === undefined
      ? unavailableResult(policy, cost, false)
      : resultFromVerdict(policy, cost, verdict);
  });
  const source: DecisionSource = failsClosed(entries) ? 'fail-closed' : hasLocal ? 'local' : 'fail-open';
  return { results, source };
}
