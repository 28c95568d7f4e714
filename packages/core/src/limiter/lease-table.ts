/** The leases one limiter holds: units taken from the store, spent in-process, by state key. */
import type { LeaseUnitCounts } from './counters.js';
import { ADAPTIVE_FIRST_UNITS } from './lease-size.js';

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
  /** An adaptive lease's current size: the units its next take starts from. */
  sizeUnits: number;
}

/**
 * Leases by state key, at most `maxKeys` (the oldest taken goes first: its unspent units are
 * dropped, which under-uses the budget and never over-admits). No timers: an expired lease is
 * replaced by the next take.
 */
export class LeaseTable {
  readonly #byKey = new Map<string, Lease>();

  /**
   * @param maxKeys most leases held
   * @param counts where the units of an evicted or dropped lease are counted as dropped
   */
  constructor(
    private readonly maxKeys: number,
    private readonly counts?: LeaseUnitCounts,
  ) {}

  /** Counts the units `lease` gives up unspent. */
  #dropped(lease: Lease | undefined): void {
    if (this.counts !== undefined && lease !== undefined && lease.units > 0)
      this.counts.dropped += lease.units;
  }

  /** The lease of `key`, if one is held. */
  get(key: string): Lease | undefined {
    return this.#byKey.get(key);
  }

  /** The lease of `key`, made empty (expired) when none is held. */
  hold(key: string): Lease {
    let lease = this.#byKey.get(key);
    if (lease === undefined) {
      if (this.#byKey.size >= this.maxKeys) {
        const oldest = this.#byKey.keys().next().value as string;
        this.#dropped(this.#byKey.get(oldest));
        this.#byKey.delete(oldest);
      }
      lease = {
        units: 0,
        expiresAtMs: 0,
        seenRemaining: 0,
        seenResetMs: 0,
        seenAtMs: 0,
        generation: 0,
        refill: undefined,
        release: undefined,
        cover: 0,
        takingUnits: 0,
        sizeUnits: ADAPTIVE_FIRST_UNITS,
      };
      this.#byKey.set(key, lease);
    }
    return lease;
  }

  /** Drops the leases of `keys` (a reset): their unspent units are given up. */
  drop(keys: readonly string[]): void {
    for (const key of keys) {
      this.#dropped(this.#byKey.get(key));
      this.#byKey.delete(key);
    }
  }
}
