/** MemoryStore's request records: the verdicts of idempotent checks, as lua/decide.lua's request record. */
import type { StoreVerdict } from '../types.js';
import { LruIndex, NO_SLOT } from './lru-index.js';

/** One idempotent check's record: its verdicts, replayed while it lives. */
export interface RequestRecord {
  readonly verdicts: readonly StoreVerdict[];
  /** Replayed while the clock is at or before this. */
  readonly expiresAtMs: number;
}

/**
 * Request records by key, least recently written first, at most `maxKeys` (the oldest goes first;
 * expired ones are dropped as new ones come). The index is built at the first record: most stores
 * never record one.
 */
export class RequestRecords {
  #index: LruIndex | undefined;
  /** The record in each slot of `#index`. */
  readonly #values: (RequestRecord | undefined)[] = [];

  constructor(readonly maxKeys: number) {}

  /** The record of `key` (it may have expired: the caller compares `expiresAtMs`). */
  get(key: string): RequestRecord | undefined {
    const slot = this.#index?.slotOf(key);
    return slot === undefined ? undefined : this.#values[slot];
  }

  /** Records copies of `verdicts` under `key` until `expiresAtMs`. */
  set(key: string, verdicts: readonly StoreVerdict[], expiresAtMs: number, now: number): void {
    this.#index ??= new LruIndex(this.maxKeys);
    const index = this.#index;
    const values = this.#values;
    const held = index.delete(key);
    if (held !== undefined) values[held] = undefined;
    for (let i = 0; i < 2; i++) {
      const oldest = index.oldest;
      if (oldest === NO_SLOT || now <= (values[oldest] as RequestRecord).expiresAtMs) break;
      index.delete(index.keyOf(oldest) as string);
      values[oldest] = undefined;
    }
    if (index.size >= this.maxKeys) {
      const oldest = index.oldest;
      index.delete(index.keyOf(oldest) as string);
      values[oldest] = undefined;
    }
    const slot = index.add(key);
    values[slot] = { verdicts: verdicts.map((v) => ({ ...v })), expiresAtMs };
  }

  /** Forgets the record of `key`, if any. */
  delete(key: string): void {
    const slot = this.#index?.delete(key);
    if (slot !== undefined) this.#values[slot] = undefined;
  }

  /** Forgets every record. */
  clear(): void {
    this.#index?.clear();
    this.#values.length = 0;
  }
}
