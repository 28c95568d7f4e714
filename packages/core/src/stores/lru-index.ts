/**
 * A bounded key -> slot index with its recency order kept as an intrusive doubly linked list
 * in two Int32Arrays (no object per key). Every operation costs the same however many keys
 * came and went: finding the least recently used key is one array read, moving a key to the
 * front is four, and no Map is ever iterated (a V8 Map iterated from the front walks every
 * entry deleted there since its last rehash, so evicting by Map order grows with churn).
 *
 * Slots are small integers from 0 below `maxKeys`, so callers keep their own per-slot data
 * in typed arrays indexed by slot. Freed slots are chained through `next` and re-used first.
 */

/** No slot: the end of the list, an empty list or an empty free chain. */
export const NO_SLOT = -1;

/** The recency-ordered index of `StateTable`, `DenialMemory` and MemoryStore's request records. */
export class LruIndex {
  readonly #maxKeys: number;
  readonly #slots = new Map<string, number>();
  /** The key in each slot (undefined when free): what eviction needs to delete from `#slots`. */
  #keys: (string | undefined)[] = [];
  /** Per slot: the next more recently used slot, or the next free slot. */
  #next: Int32Array;
  /** Per slot: the next less recently used slot. */
  #prev: Int32Array;
  /** Least recently used slot. */
  #oldest = NO_SLOT;
  /** Most recently used slot. */
  #newest = NO_SLOT;
  #free = NO_SLOT;
  /** Slots handed out so far (the high-water mark). */
  #used = 0;
  /**
   * Slots visited by list operations since construction: the work an index does, which stays
   * a small constant per operation. Tests read it; nothing else does.
   */
  visitedSlots = 0;

  /** @param maxKeys most keys held; slot numbers stay below it */
  constructor(maxKeys: number) {
    this.#maxKeys = maxKeys;
    const capacity = Math.min(maxKeys, 1024);
    this.#next = new Int32Array(capacity);
    this.#prev = new Int32Array(capacity);
  }

  /** Keys held. */
  get size(): number {
    return this.#slots.size;
  }

  /** One more than the highest slot handed out: callers size their per-slot arrays to it. */
  get highWaterSlots(): number {
    return this.#used;
  }

  /** The slot of `key`, or undefined. Leaves the order alone. */
  slotOf(key: string): number | undefined {
    return this.#slots.get(key);
  }

  /** The key held in `slot`, or undefined when the slot is free. */
  keyOf(slot: number): string | undefined {
    return this.#keys[slot];
  }

  /** The least recently used slot, or `NO_SLOT` when empty. */
  get oldest(): number {
    return this.#oldest;
  }

  /** The slot used after `slot` (more recently), or `NO_SLOT`. */
  newerThan(slot: number): number {
    this.visitedSlots++;
    return this.#next[slot] as number;
  }

  /** Makes `slot` the most recently used. */
  touch(slot: number): void {
    if (slot === this.#newest) return;
    this.#unlink(slot);
    this.#append(slot);
  }

  /**
   * Adds `key` (not held) as the most recently used and returns its slot. The caller makes room
   * first: with `size` at `maxKeys` this throws.
   */
  add(key: string): number {
    if (this.#slots.size >= this.#maxKeys) throw new RangeError('LruIndex: full');
    let slot = this.#free;
    if (slot !== NO_SLOT) {
      this.#free = this.#next[slot] as number;
    } else {
      slot = this.#used++;
      if (slot >= this.#next.length) this.#grow();
    }
    this.#slots.set(key, slot);
    this.#keys[slot] = key;
    this.#append(slot);
    return slot;
  }

  /** Removes `key`; returns the slot it held (now free), or undefined when it was not held. */
  delete(key: string): number | undefined {
    const slot = this.#slots.get(key);
    if (slot === undefined) return undefined;
    this.#slots.delete(key);
    this.#keys[slot] = undefined;
    this.#unlink(slot);
    this.#next[slot] = this.#free;
    this.#free = slot;
    return slot;
  }

  /** Removes every key. */
  clear(): void {
    this.#slots.clear();
    this.#keys = [];
    this.#oldest = NO_SLOT;
    this.#newest = NO_SLOT;
    this.#free = NO_SLOT;
    this.#used = 0;
  }

  #unlink(slot: number): void {
    this.visitedSlots++;
    const prev = this.#prev[slot] as number;
    const next = this.#next[slot] as number;
    if (prev === NO_SLOT) this.#oldest = next;
    else this.#next[prev] = next;
    if (next === NO_SLOT) this.#newest = prev;
    else this.#prev[next] = prev;
  }

  #append(slot: number): void {
    this.visitedSlots++;
    const last = this.#newest;
    this.#prev[slot] = last;
    this.#next[slot] = NO_SLOT;
    if (last === NO_SLOT) this.#oldest = slot;
    else this.#next[last] = slot;
    this.#newest = slot;
  }

  #grow(): void {
    const capacity = Math.min(this.#maxKeys, this.#next.length * 2);
    const next = new Int32Array(capacity);
    next.set(this.#next);
    this.#next = next;
    const prev = new Int32Array(capacity);
    prev.set(this.#prev);
    this.#prev = prev;
  }
}
