/**
 * The key -> state table behind MemoryStore, laid out for a million keys: one Map from key
 * to a small integer slot (insertion order = least recently used first), and the numbers
 * of every slot in one Float64Array (no object, no boxed double per key). Sliding-log
 * states (arrays) sit in a side map by slot.
 */
import type { FixedWindowState } from '../algorithms/fixed-window.js';
import type { GcraState } from '../algorithms/gcra.js';
import type { SlidingLogState } from '../algorithms/sliding-log.js';
import type { SlidingWindowState } from '../algorithms/sliding-window.js';
import type { TokenBucketState } from '../algorithms/token-bucket.js';
import type { Algorithm } from '../types.js';

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
  /** key -> slot; Map order is least recently used first. */
  readonly #index = new Map<string, number>();
  /** The key inserted into `#index` last (the most recently used), or undefined. */
  #newest: string | undefined = undefined;
  #numbers: Float64Array;
  #codes: Uint8Array;
  readonly #logs = new Map<number, SlidingLogState>();
  readonly #free: number[] = [];
  #next = 0;

  constructor(maxKeys: number) {
    this.#maxKeys = maxKeys;
    const capacity = Math.min(maxKeys, 1024);
    this.#numbers = new Float64Array(capacity * FIELDS);
    this.#codes = new Uint8Array(capacity);
  }

  /** Keys held (expired keys not yet swept included). */
  get size(): number {
    return this.#index.size;
  }

  /**
   * The live state of `key` for `algorithm`, or undefined when absent, expired (then
   * dropped) or written by another algorithm. A live key becomes the most recently used.
   */
  read(key: string, algorithm: Algorithm, now: number): unknown {
    const slot = this.#index.get(key);
    if (slot === undefined) return undefined;
    const base = slot * FIELDS;
    if (now > (this.#numbers[base + EXPIRES] as number)) {
      this.delete(key);
      return undefined;
    }
    if (key !== this.#newest) {
      // Re-insert: Map order is recency. The newest key is already in place.
      this.#index.delete(key);
      this.#index.set(key, slot);
      this.#newest = key;
    }
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
   * in the same synchronous step, which made it the most recently used, so moving it again
   * would only cost a Map delete and insert (and a table rehash every so often).
   */
  write(key: string, algorithm: Algorithm, state: unknown, expiresAtMs: number, now: number): void {
    let slot = this.#index.get(key);
    if (slot === undefined) {
      if (this.#index.size >= this.#maxKeys) {
        this.sweep(now);
        if (this.#index.size >= this.#maxKeys) {
          const oldest = this.#index.keys().next();
          if (!oldest.done) this.delete(oldest.value);
        }
      }
      slot = this.#allocate();
      this.#index.set(key, slot);
      this.#newest = key;
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
    if (code !== SLIDING_LOG) this.#logs.delete(slot);
  }

  /** Forget `key`. */
  delete(key: string): void {
    const slot = this.#index.get(key);
    if (slot === undefined) return;
    this.#index.delete(key);
    if (key === this.#newest) this.#newest = undefined;
    this.#logs.delete(slot);
    this.#codes[slot] = 0;
    this.#free.push(slot);
  }

  /** Forget every key. */
  clear(): void {
    this.#index.clear();
    this.#newest = undefined;
    this.#logs.clear();
    this.#free.length = 0;
    this.#next = 0;
  }

  /** Drop up to a few expired keys from the least recently used end. */
  sweep(now: number): void {
    for (let i = 0; i < SWEEP_COUNT; i++) {
      const oldest = this.#index.entries().next();
      if (oldest.done) return;
      const [key, slot] = oldest.value;
      if (now <= (this.#numbers[slot * FIELDS + EXPIRES] as number)) return;
      this.delete(key);
    }
  }

  #allocate(): number {
    const reused = this.#free.pop();
    if (reused !== undefined) return reused;
    const slot = this.#next++;
    if (slot >= this.#codes.length) {
      const capacity = Math.min(this.#maxKeys, this.#codes.length * 2);
      const numbers = new Float64Array(capacity * FIELDS);
      numbers.set(this.#numbers);
      this.#numbers = numbers;
      const codes = new Uint8Array(capacity);
      codes.set(this.#codes);
      this.#codes = codes;
    }
    return slot;
  }
}
