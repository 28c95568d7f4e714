/**
 * MemoryStore's request records (idempotent checks): the verdicts of a recorded request by its
 * key, least recently written first, at most `maxKeys`; expired records go first. As the decide
 * script's request record (lua/decide.lua).
 */
import type { StoreVerdict } from '../types.js';
import { LruIndex, NO_SLOT } from './lru-index.js';

/**
 * Options of one check. `requestKey` + `requestTtlMs` make it idempotent: in mode
 * 'consume' a request whose record lives replays its first verdicts and charges nothing;
 * otherwise the verdicts (allowed or denied) are recorded for `requestTtlMs`. Like the
 * decide script's request record (lua/decide.lua).
 */
export interface MemoryStoreCheckOptions {
  readonly requestKey?: string;
  readonly requestTtlMs?: number;
}

/** One recorded request: its verdicts, replayed while the clock is at or before `expiresAtMs`. */
export interface RequestRecord {
  readonly verdicts: readonly StoreVerdict[];
  readonly expiresAtMs: number;
}

/** A bounded table of request records; its index is built at the first record (most stores never keep one). */
export class RequestRecords {
  readonly #maxKeys: number;
  #index: LruIndex | undefined;
  /** The record in each slot of `#index`. */
  readonly #values: (RequestRecord | undefined)[] = [];

  constructor(maxKeys: number) {
    this.#maxKeys = maxKeys;
  }

  /** The record of `key`, or undefined. */
  get(key: string): RequestRecord | undefined {
    const slot = this.#index?.slotOf(key);
    return slot === undefined ? undefined : this.#values[slot];
  }

  /**
   * The verdicts a check of `count` entries replays at `now`: copies of those recorded under `key`;
   * `undefined` when no record lives; `'other'` when the live record holds another number of
   * entries (it is left alone, and this check is not recorded).
   */
  replay(key: string, now: number, count: number): StoreVerdict[] | 'other' | undefined {
    const record = this.get(key);
    if (record === undefined || now > record.expiresAtMs) return undefined;
    return record.verdicts.length === count ? record.verdicts.map((v) => ({ ...v })) : 'other';
  }

  /** Records copies of `verdicts` under `key` until `expiresAtMs`, dropping expired or the oldest records for room. */
  set(key: string, verdicts: readonly StoreVerdict[], expiresAtMs: number, now: number): void {
    this.#index ??= new LruIndex(this.#maxKeys);
    const index = this.#index;
    const values = this.#values;
    this.delete(key);
    for (let i = 0; i < 2; i++) {
      const oldest = index.oldest;
      if (oldest === NO_SLOT || now <= (values[oldest] as RequestRecord).expiresAtMs) break;
      this.delete(index.keyOf(oldest) as string);
    }
    if (index.size >= this.#maxKeys) this.delete(index.keyOf(index.oldest) as string);
    const slot = index.add(key);
    values[slot] = { verdicts: verdicts.map((v) => ({ ...v })), expiresAtMs };
  }

  /** Forgets the record of `key`. */
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

/** Throws unless a check's `requestKey` and `requestTtlMs` go together and the TTL is a positive number of ms. */
export function checkRecordOptions(requestKey: string | undefined, requestTtlMs: number | undefined): void {
  if ((requestKey === undefined) !== (requestTtlMs === undefined)) {
    throw new Error('MemoryStore: "requestKey" and "requestTtlMs" go together');
  }
  if (requestTtlMs !== undefined && !(Number.isFinite(requestTtlMs) && requestTtlMs > 0)) {
    throw new Error(
      `MemoryStore: "requestTtlMs" must be a positive number of milliseconds, got ${requestTtlMs}`,
    );
  }
}
