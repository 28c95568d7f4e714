/**
 * The key -> state table behind MemoryStore, laid out for a million keys: an `LruIndex` gives
 * each key a small integer slot and keeps the recency order in typed arrays, and the numbers
 * of every slot sit in one Float64Array (no object, no boxed double per key), written and read
 * by each algorithm's state codec (algorithms/module.ts); states a codec keeps as objects (the
 * sliding log's arrays) sit in a side map by slot. Each algorithm's code in the table is its
 * position in the registry. Every read, write and sweep costs the same however many keys were
 * evicted before (see lru-index.ts).
 */
import { STATE_NUMBERS_MAX, type StateCodec } from '../algorithms/module.js';
import { ALGORITHM_LIST, type Algorithm } from '../algorithms/registry.js';
import { LruIndex, NO_SLOT } from './lru-index.js';

/** Numbers per slot: the state's numbers and the expiry time. */
const FIELDS = STATE_NUMBERS_MAX + 1;
const EXPIRES = STATE_NUMBERS_MAX;

/** How the table keeps one algorithm's states: its code in `#codes` and its codec. */
interface Kind {
  /** The algorithm's position in the registry, plus one (0: an empty slot). */
  readonly code: number;
  readonly state: StateCodec<unknown>;
}

/** Every algorithm's kind, by name. */
const KINDS = {} as { [A in Algorithm]: Kind };
ALGORITHM_LIST.forEach((module, i) => {
  KINDS[module.name] = { code: i + 1, state: module.state };
});

/** How many old-end keys one sweep inspects for expiry. */
const SWEEP_COUNT = 2;

/** A bounded, least-recently-used table of algorithm states with lazy expiry. */
export class StateTable {
  readonly #maxKeys: number;
  readonly #index: LruIndex;
  #numbers: Float64Array;
  #codes: Uint8Array;
  /** The states kept as objects, by slot. */
  readonly #objects = new Map<number, unknown>();
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
    const { code, state } = KINDS[algorithm];
    if (this.#codes[slot] !== code) return undefined;
    return state.kind === 'numbers' ? state.decode(this.#numbers, base) : this.#objects.get(slot);
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
    const kind = KINDS[algorithm];
    this.#codes[slot] = kind.code;
    const base = slot * FIELDS;
    this.#numbers[base + EXPIRES] = expiresAtMs;
    if (kind.state.kind === 'numbers') {
      kind.state.encode(state, this.#numbers, base);
      if (this.#objects.size > 0) this.#objects.delete(slot);
    } else {
      this.#objects.set(slot, state);
    }
  }

  /** When the state of `key` expires (ms), or undefined when the table does not hold it. */
  expiresAt(key: string): number | undefined {
    const slot = this.#index.slotOf(key);
    return slot === undefined ? undefined : (this.#numbers[slot * FIELDS + EXPIRES] as number);
  }

  /** Forget `key`. */
  delete(key: string): void {
    const slot = this.#index.delete(key);
    if (slot === undefined) return;
    if (this.#objects.size > 0) this.#objects.delete(slot);
    this.#codes[slot] = 0;
  }

  /** Forget every key. */
  clear(): void {
    this.#index.clear();
    this.#objects.clear();
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
