/** The fail modes: each policy's result when the store could not decide. */
import { fallbackFailMode } from '../policy/lease.js';
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
