/**
 * The shape every algorithm shares. Each algorithm is a pure function of its stored
 * state, the time and the policy numbers; it mirrors one file in lua/ operation for
 * operation, so MemoryStore and the Redis decide script give identical answers.
 */

/** The policy numbers an algorithm reads (see `CompiledPolicy`) plus the cost. */
export interface AlgorithmParams {
  /** Quota: units per window, or bucket capacity (token bucket, GCRA). */
  readonly limit: number;
  /** Window length in ms (window algorithms). */
  readonly windowMs: number;
  /** Ms to earn back one unit (token bucket, GCRA). */
  readonly intervalMs: number;
  /** Units to charge, > 0. */
  readonly cost: number;
}

/** One algorithm's answer for one key, before the all-or-nothing step decides to charge. */
export interface Evaluation<S> {
  /** This entry alone would admit `cost`. */
  readonly allowed: boolean;
  /** Whole units left now (nothing charged). */
  readonly remaining: number;
  /** Ms until the quota is fully restored, nothing charged. */
  readonly resetMs: number;
  /** Ms until `cost` could be admitted: 0 when allowed, -1 when never (cost > limit). */
  readonly retryAfterMs: number;
  /** Whole units left if charged. */
  readonly chargedRemaining: number;
  /** Ms until the quota is fully restored if charged. */
  readonly chargedResetMs: number;
  /** The state to store if charged. */
  charge(): S;
}

/** An algorithm: `state` is undefined for a fresh (or expired) key. */
export type AlgorithmFn<S> = (state: S | undefined, nowMs: number, params: AlgorithmParams) => Evaluation<S>;

/** Slack for comparisons against a quota (units); see lua/common.lua. */
export const EPS = 1e-9;

/** Whole units: floor with EPS slack, clamped to [0, floor(limit)] (lua/common.lua `whole`). */
export function whole(x: number, limit: number): number {
  const r = Math.floor(x + EPS);
  if (r < 0) return 0;
  const most = Math.floor(limit);
  if (r > most) return most;
  return r;
}
