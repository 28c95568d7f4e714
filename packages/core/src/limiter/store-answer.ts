/** What the steps of a check answer: verdicts and who gave them, or "the store could not decide". */
import type { PolicyResult, StoreSettleEntry, StoreVerdict } from '../types.js';

/** Why the store could not decide. */
export type UnavailableCause = 'error' | 'timeout' | 'breaker-open' | 'wrong-verdict-count';

/**
 * The store could not decide this call: it threw or rejected, missed its deadline, answered with
 * the wrong number of verdicts, or the breaker is open. The fail modes decide instead.
 */
export class StoreUnavailable {
  /**
   * @param cause why the store could not decide
   * @param localVerdicts by entry index, the verdicts the in-process fallback gave for the
   *   `failMode: 'local'` entries (and a live lease for the `failMode: 'lease'` ones); undefined
   *   where none was given
   */
  constructor(
    readonly cause: UnavailableCause,
    readonly localVerdicts?: readonly (StoreVerdict | undefined)[],
  ) {}
}

/** Verdicts for every entry, in entry order, and where they came from. */
export interface StoreVerdicts {
  /**
   * `store`: the store decided; `deny-cache`: an in-process memory of a store denial did;
   * `lease`: leases taken before did (no store call); `local-stage`: a policy's local stage
   * turned the request away (no store call); `quota`: a regional quota's share did (no store call).
   */
  readonly source: 'store' | 'deny-cache' | 'lease' | 'local-stage' | 'quota';
  readonly verdicts: readonly StoreVerdict[];
  /**
   * The per-policy results themselves when the answer already holds them (a deny-cache hit: the
   * remembered results, waits counted down), so they are not made again; undefined otherwise.
   */
  readonly results: readonly PolicyResult[] | undefined;
}

/** One call's answer through the store layers. */
export type StoreAnswer = StoreVerdicts | StoreUnavailable;

/**
 * What a settle came to: `settled` (the store applied at least one entry), `noop` (nothing to
 * settle: already settled, not a reservation, the keys expired or their window is over) or
 * `unavailable` (the store failed; nothing is retried).
 */
export type SettleAnswer = 'settled' | 'noop' | 'unavailable';

/** The answer for the store's per-entry flags. */
export function settleAnswerOf(flags: unknown, entries: readonly StoreSettleEntry[]): SettleAnswer {
  if (!Array.isArray(flags) || flags.length !== entries.length) return 'unavailable';
  return flags.includes(true) ? 'settled' : 'noop';
}
