/** The leases one limiter holds: units taken from the store, spent in-process, by state key. */
import { LruIndex } from '../stores/lru-index.js';
import type { LeaseUnitCounts } from './counters.js';
import type { Lease } from './lease.js';
import { ADAPTIVE_FIRST_UNITS } from './lease-size.js';

export type { Lease } from './lease.js';

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
        probing: false,
        firstRoundEndsAtMs: 0,
        firstRoundTurn: -1,
        sizeUnits: ADAPTIVE_FIRST_UNITS,
        checkedAtMs: Number.NEGATIVE_INFINITY,
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
