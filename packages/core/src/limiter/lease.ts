/** One key's lease, as the lease table holds it. */

/** One key's lease, and what the store said when it was taken. */
export interface Lease {
  /** Units left to spend (fractions for fractional costs). */
  units: number;
  /** When the lease stops being spent, by the limiter's clock (ms). */
  expiresAtMs: number;
  /** The store's remaining after the take (the global budget, the lease excluded). */
  seenRemaining: number;
  /** The store's resetMs after the take. */
  seenResetMs: number;
  /** When the take was asked (ms). */
  seenAtMs: number;
  /** Counts the takes of this key: units held out of one lease go back only to that lease. */
  generation: number;
  /** The latest take in flight for this key; checks it covers wait for it. */
  refill: Promise<void> | undefined;
  /** Settles `refill` when that take is answered. */
  release: (() => void) | undefined;
  /** Units of that take no check has counted on yet: a check of at most this cost waits for it. */
  cover: number;
  /** Units asked for by the takes of this key in flight. */
  takingUnits: number;
  /**
   * A probe of this key is in flight: a take of one check's need, sent beside the take in flight
   * beyond the budget as last seen; the checks beyond that budget wait for it.
   */
  probing: boolean;
  /** Until when (ms) checks of a key not taken yet may take beside its first take: see `budgetBeyondTakes`. */
  firstRoundEndsAtMs: number;
  /** The synchronous run (the leases' count) that made the key's first take: only it may take beside it. */
  firstRoundTurn: number;
  /** An adaptive lease's current size: the units its next take starts from. */
  sizeUnits: number;
  /** When the key was last checked (ms; -Infinity before its first check): its demand, see `showsDemand`. */
  checkedAtMs: number;
}
