/**
 * The key -> state table behind MemoryStore, laid out for a million keys: an `LruIndex` gives
 * each key a small integer slot and keeps the recency order in typed arrays, and the numbers
 * of every slot sit in one Float64Array (no object, no boxed double per key). Sliding-log
 * states (arrays) sit in a side map by slot. Every read, write and sweep costs the same
 * however many keys were evicted before (see lru-index.ts).
 */
import type { FixedWindowState } from '../algorithms/fixed-window.js';
import type { GcraState } from '../algorithms/gcra.js';
import type { SlidingLogState } from '../algorithms/sliding-log.js';
import type { SlidingWindowState } from '../algorithms/sliding-window.js';
import type { TokenBucketState } from '../algorithms/token-bucket.js';
import type { Algorithm } from '../types.js';
import { LruIndex, NO_SLOT } from './lru-index.js';

/** Numbers per slot: three state fields and the expiry time. */
const FIELDS = 4;
const EXPIRES = 3;

const CODES: { readonly [A in Algorithm]: number } = {
  'token-bucket': 1,
  gcra: 2,
  'sliding-window': 3,
  'fixed-window': 4,
  'sliding-log': 5,
};
const SLIDING_LOG = 5;

/** How many old-end keys one sweep inspects for expiry. */
const SWEEP_COUNT = 2;

/** A bounded, least-recently-used table of algorithm states with lazy expiry. */
export class StateTable {
  readonly #maxKeys: number;
  readonly #index: LruIndex;
  #numbers: Float64Array;
  #codes: Uint8Array;
  readonly #logs = new Map<number, SlidingLogState>();
  #liveEvictions = 0;

  constructor(maxKeys: number) {
    this.#maxKeys = maxKeys;
    this.#index = new LruIndex(maxKeys);
    const capacity = Math.min(maxKeys, 1024);
    this.#numbers = new Float64Array(capacity * FIELDS);
    this.#codes = new Uint8Array(capacity);
  }

  /** Keys held (expired keys not yet swept included). */
  get size(): number {
    return this.#index.size;
  }

  /** Keys dropped to make room while their state was still live (their usage was forgotten). */
  get liveEvictions(): number {
    return this.#liveEvictions;
  }

  /** Slots visited by the recency list so far; tests count the work per check with it. */
  get visitedSlots(): number {
    return this.#index.visitedSlots;
  }

  /**
   * The live state of `key` for `algorithm`, or undefined when absent, expired (then
   * dropped) or written by another algorithm. A live key becomes the most recently used.
   */
  read(key: string, algorithm: Algorithm, now: number): unknown {
    const slot = this.#index.slotOf(key);
    if (slot === undefined) return undefined;
    const base = slot * FIELDS;
    if (now > (this.#numbers[base + EXPIRES] as number)) {
      this.delete(key);
      return undefined;
    }
    this.#index.touch(slot);
    const code = CODES[algorithm];
    if (this.#codes[slot] !== code) return undefined;
    const n = this.#numbers;
    const a = n[base] as number;
    switch (code) {
      case 1:
        return { tokens: a, tsMs: n[base + 1] as number } satisfies TokenBucketState;
      case 2:
        return { used: a, tsMs: n[base + 1] as number } satisfies GcraState;
      case 3:
        return {
          startMs: a,
          current: n[base + 1] as number,
          previous: n[base + 2] as number,
        } satisfies SlidingWindowState;
      case 4:
        return { startMs: a, count: n[base + 1] as number } satisfies FixedWindowState;
      default:
        return this.#logs.get(slot);
    }
  }

  /**
   * Store `state` for `key` until `expiresAtMs`; makes room (expired, then least recently used)
   * when full. A key already held keeps its place in the recency order: callers `read` it first
   * in the same synchronous step, which made it the most recently used.
   */
  write(key: string, algorithm: Algorithm, state: unknown, expiresAtMs: number, now: number): void {
    const index = this.#index;
    let slot = index.slotOf(key);
    if (slot === undefined) {
      if (index.size >= this.#maxKeys) {
        this.sweep(now);
        const oldest = index.oldest;
        if (index.size >= this.#maxKeys && oldest !== NO_SLOT) {
          if (now <= (this.#numbers[oldest * FIELDS + EXPIRES] as number)) this.#liveEvictions++;
          this.delete(index.keyOf(oldest) as string);
        }
      }
      slot = index.add(key);
      if (slot >= this.#codes.length) this.#grow();
    }
    const code = CODES[algorithm];
    this.#codes[slot] = code;
    const n = this.#numbers;
    const base = slot * FIELDS;
    n[base + EXPIRES] = expiresAtMs;
    switch (code) {
      case 1: {
        const s = state as TokenBucketState;
        n[base] = s.tokens;
        n[base + 1] = s.tsMs;
        break;
      }
      case 2: {
        const s = state as GcraState;
        n[base] = s.used;
        n[base + 1] = s.tsMs;
        break;
      }
      case 3: {
        const s = state as SlidingWindowState;
        n[base] = s.startMs;
        n[base + 1] = s.current;
        n[base + 2] = s.previous;
        break;
      }
      case 4: {
        const s = state as FixedWindowState;
        n[base] = s.startMs;
        n[base + 1] = s.count;
        break;
      }
      default:
        this.#logs.set(slot, state as SlidingLogState);
    }
    if (code !== SLIDING_LOG && this.#logs.size > 0) this.#logs.delete(slot);
  }

  /** Forget `key`. */
  delete(key: string): void {
    const slot = this.#index.delete(key);
    if (slot === undefined) return;
    if (this.#logs.size > 0) this.#logs.delete(slot);
    this.#codes[slot] = 0;
  }

  /** Forget every key. */
  clear(): void {
    this.#index.clear();
    this.#logs.clear();
  }

  /** Drop up to a few expired keys from the least recently used end. */
  sweep(now: number): void {
    const index = this.#index;
    for (let i = 0; i < SWEEP_COUNT; i++) {
      const oldest = index.oldest;
      if (oldest === NO_SLOT) return;
      if (now <= (this.#numbers[oldest * FIELDS + EXPIRES] as number)) return;
      this.delete(index.keyOf(oldest) as string);
    }
  }

  #grow(): void {
    const capacity = Math.min(this.#maxKeys, this.#codes.length * 2);
    const numbers = new Float64Array(capacity * FIELDS);
    numbers.set(this.#numbers);
    this.#numbers = numbers;
    const codes = new Uint8Array(capacity);
    codes.set(this.#codes);
    this.#codes = codes;
  }
}
