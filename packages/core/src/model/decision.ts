/** Decisions: the answer to a check, per policy and as a whole, and the event each one emits. */

import type { Algorithm } from '../algorithms/registry.js';
import type { FailMode } from './fail-mode.js';

/**
 * Why a decision came out the way it did. `forbidden`: the request's client IP or identity is
 * on the adapter's deny list (answered 403; no policy was asked).
 */
export type Outcome = 'allowed' | 'over_limit' | 'unavailable' | 'forbidden';

/**
 * Where a decision was made. `deny-list`: the adapter's deny list, before any policy. `lease`:
 * in-process from leases taken before (no store call). `local-stage`: a policy's local stage
 * turned the request away (no store call). `quota`: from a regional quota's share (no store call).
 */
export type DecisionSource =
  | 'store'
  | 'deny-cache'
  | 'local'
  | 'fail-open'
  | 'fail-closed'
  | 'deny-list'
  | 'lease'
  | 'local-stage'
  | 'quota';

/** The verdict for one policy. */
export interface PolicyResult {
  readonly policy: string;
  readonly algorithm: Algorithm;
  /** This policy admits the request (before shadow is applied). */
  readonly allowed: boolean;
  readonly outcome: Outcome;
  readonly limit: number;
  readonly windowMs: number;
  /** Whole units left after this decision, between 0 and `limit`. */
  readonly remaining: number;
  /** Milliseconds until the quota is fully restored. */
  readonly resetMs: number;
  /** Milliseconds until this request's cost could be admitted; 0 when allowed. */
  readonly retryAfterMs: number;
  readonly cost: number;
  readonly shadow: boolean;
  readonly failMode: FailMode;
  /**
   * True when this policy denied because the identity is banned (`policy.ban`): by an earlier
   * denial, or by this one, which started the ban. `retryAfterMs` is then the rest of the block.
   * Absent otherwise.
   */
  readonly banned?: true;
}

/** The answer to `limiter.check()`. */
export interface Decision {
  /** Let the request through (shadow denies and `open` failures are allowed). */
  readonly allowed: boolean;
  readonly outcome: Outcome;
  /**
   * The policy that decided: when denied, the denying policy with the longest wait;
   * when allowed, the one with the fewest units remaining. Undefined when none applied.
   */
  readonly policy: string | undefined;
  readonly limit: number;
  readonly remaining: number;
  readonly resetMs: number;
  readonly retryAfterMs: number;
  /** A shadow policy would have denied this request. */
  readonly shadowed: boolean;
  readonly source: DecisionSource;
  /** One entry per policy that applied, in the limiter's policy order. */
  readonly results: readonly PolicyResult[];
}

/** Emitted once per decision. Carries no identity, key or route. */
export interface DecisionEvent {
  readonly policy: string | undefined;
  readonly outcome: Outcome;
  /**
   * Per policy, the metric outcome (`allowed`, `over_limit`, `shadow_over_limit`, `fail_open`,
   * `fail_closed`) and whether it was near its limit: admitted with at most a fifth of the limit
   * remaining (`sluice_near_limit_total`, as Envoy's rate limit service counts near_limit).
   */
  readonly metricOutcomes: readonly {
    readonly policy: string;
    readonly outcome: MetricOutcome;
    readonly nearLimit?: true;
  }[];
  readonly allowed: boolean;
  readonly shadowed: boolean;
  readonly source: DecisionSource;
  readonly durationMs: number;
}

/** Outcome labels of `sluice_decisions_total`. */
export type MetricOutcome = 'allowed' | 'over_limit' | 'shadow_over_limit' | 'fail_open' | 'fail_closed';

/** What `limiter.onSlotLost` listeners get: the policy only (no identity, no key). */
export interface SlotLostEvent {
  /** The concurrency policy whose slot was lost. */
  readonly policy: string;
}
