/** The leases one limiter holds: units taken from the store, spent in-process, by state key. */
import { LruIndex } from '../stores/lru-index.js';
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
 * Leases by state key, at most `maxKeys` (the oldest held goes first: its unspent units are
 * dropped, which under-uses the budget and never over-admits). No timers: an expired lease is
 * replaced by the next take. The order is an `LruIndex`, so holding and evicting cost the same
 * however many keys came and went (a V8 Map evicted from its front slows down with churn).
 */
export class LeaseTable {
  readonly #index: LruIndex;
  /** The lease in each slot of `#index`. */
  readonly #bySlot: (Lease | undefined)[] = [];

  /**
   * @param maxKeys most leases held
   * @param counts where the units of an evicted or dropped lease are counted as dropped
   */
  constructor(
    private readonly maxKeys: number,
    private readonly counts?: LeaseUnitCounts,
  ) {
    this.#index = new LruIndex(maxKeys);
  }

  /** Counts the units `lease` gives up unspent. */
  #dropped(lease: Lease | undefined): void {
    if (this.counts !== undefined && lease !== undefined && lease.units > 0)
      this.counts.dropped += lease.units;
  }

  /** The lease of `key`, if one is held. */
  get(key: string): Lease | undefined {
    const slot = this.#index.slotOf(key);
    return slot === undefined ? undefined : this.#bySlot[slot];
  }

  /** The lease of `key`, made empty (expired) when none is held. */
  hold(key: string): Lease {
    let lease = this.get(key);
    if (lease === undefined) {
      const index = this.#index;
      if (index.size >= this.maxKeys) {
        const oldest = index.oldest;
        this.#dropped(this.#bySlot[oldest]);
        this.#bySlot[oldest] = undefined;
        index.delete(index.keyOf(oldest) as string);
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
      this.#bySlot[index.add(key)] = lease;
    }
    return lease;
  }

  /** Drops the leases of `keys` (a reset): their unspent units are given up. */
  drop(keys: readonly string[]): void {
    for (const key of keys) {
      const slot = this.#index.delete(key);
      if (slot === undefined) continue;
      this.#dropped(this.#bySlot[slot]);
      this.#bySlot[slot] = undefined;
    }
  }
}
