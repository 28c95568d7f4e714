/**
 * The local deny cache: after the store denied a set of keys until T, the same set of keys asked
 * again with the same or higher costs is denied in-process until T, without a store call.
 *
 * It never admits anything (a miss goes to the store) and it only denies what the store is
 * certain to deny: a denied request consumed nothing, other clients can only use up capacity,
 * and the store's `retryAfterMs` is the earliest moment the denying key could admit that cost.
 * Only enforcing (non-shadow) denials are remembered.
 *
 * Two bounds keep a remembered denial honest. A wait is never taken as longer than the policy's
 * longest possible wait (state written by another algorithm, or a clock that went backwards,
 * must not turn into a denial of hours); a ban's wait is the store's, the rest of its block. And a denial is remembered by the rule every in-process
 * memory of a denial keeps (`rememberedUntilMs`, denial-memory.ts): at most `maxAgeMs` (default
 * 1 s), so after a reset on another instance every instance is back at the store within `maxAgeMs`.
 * A denial answered from here tells the store's own wait counted down: a client that waits it is
 * past the moment the store admits.
 *
 * The recency order is an `LruIndex` (typed arrays), so remembering and evicting cost the same
 * however many key sets came and went.
 */

import { ALGORITHMS } from '../algorithms/registry.js';
import { LruIndex, NO_SLOT } from '../stores/lru-index.js';
import type { Algorithm, PolicyResult } from '../types.js';
import { rememberedUntilMs, stillRemembered } from './denial-memory.js';

/**
 * The longest wait a policy can ask for, in ms: its algorithm's `longestWaitWindows` windows
 * (a window for the fixed window and the sliding log; two for the sliding window counter, whose
 * previous window still weighs during the current one, and for the token bucket and GCRA, a full
 * refill and the repaying of a settle's debt of one limit).
 */
export function longestWaitMs(algorithm: Algorithm, windowMs: number): number {
  return Math.ceil(ALGORITHMS[algorithm].windows.longestWaitWindows * windowMs);
}

interface Remembered {
  /** Costs of the remembered check, per entry. */
  readonly costs: readonly number[];
  /**
   * Per entry: the time until which that entry's key certainly denies that cost (1 ms before the
   * store's wait, rounded up, is over); 0 when it did not deny.
   */
  readonly untilMs: readonly number[];
  /** The latest of `untilMs`: past it, the memory is useless. */
  readonly expiresAtMs: number;
  readonly atMs: number;
  readonly results: readonly PolicyResult[];
}

/** Bounded memory of recent store denials, keyed by the exact set of storage keys of a check. */
export class DenyCache {
  private readonly index: LruIndex;
  /** The remembered check in each slot of `index`. */
  private readonly values: (Remembered | undefined)[] = [];

  /**
   * @param maxKeys most key sets remembered; the least recently remembered is evicted first
   * @param maxAgeMs longest a denial is remembered, in ms: how long a reset elsewhere can go unseen
   */
  constructor(
    private readonly maxKeys: number,
    private readonly maxAgeMs: number,
  ) {
    this.index = new LruIndex(maxKeys);
  }

  /** Number of remembered key sets. */
  get size(): number {
    return this.index.size;
  }

  /** Slots the recency list visited so far (for tests counting work per call). */
  get visitedSlots(): number {
    return this.index.visitedSlots;
  }

  /**
   * Remembers a denied check. `results` are in entry order; only entries that are not shadow and
   * did not allow count.
   */
  remember(setKey: string, costs: readonly number[], results: readonly PolicyResult[], nowMs: number): void {
    // Waits in results are rounded up to whole ms; 1 ms less keeps the rounding from ever
    // extending a denial past the moment the store would admit.
    let latestMs = 0;
    const untilMs = results.map((r) => {
      if (r.shadow || r.allowed || !(r.retryAfterMs > 1)) return 0;
      // A ban's wait is the rest of its block, which the store keeps apart from the policy's state.
      const waitMs =
        r.banned === true ? r.retryAfterMs : Math.min(r.retryAfterMs, longestWaitMs(r.algorithm, r.windowMs));
      const until = nowMs + waitMs - 1;
      if (until > latestMs) latestMs = until;
      return until;
    });
    const expiresAtMs = rememberedUntilMs(nowMs, latestMs, this.maxAgeMs);
    if (expiresAtMs <= nowMs) return;
    const index = this.index;
    const held = index.delete(setKey);
    if (held !== undefined) this.values[held] = undefined;
    if (index.size >= this.maxKeys) {
      const oldest = index.oldest;
      index.delete(index.keyOf(oldest) as string);
      this.values[oldest] = undefined;
    }
    const slot = index.add(setKey);
    this.values[slot] = { costs, untilMs, expiresAtMs, atMs: nowMs, results };
  }

  /**
   * The results to answer with when this check is certain to be denied, else undefined.
   * Denied entries carry the remaining wait; the others are the remembered results.
   */
  lookup(setKey: string, costs: readonly number[], nowMs: number): PolicyResult[] | undefined {
    const slot = this.index.slotOf(setKey);
    if (slot === undefined) return undefined;
    const hit = this.values[slot] as Remembered;
    if (!stillRemembered(nowMs, hit.atMs, hit.expiresAtMs)) {
      this.index.delete(setKey);
      this.values[slot] = undefined;
      return undefined;
    }
    let denied = false;
    const elapsedMs = nowMs - hit.atMs;
    const results = hit.results.map((r, i): PolicyResult => {
      const cost = costs[i] ?? r.cost;
      const until = hit.untilMs[i] ?? 0;
      const resetMs = Math.max(0, r.resetMs - elapsedMs);
      if (until > nowMs && cost >= (hit.costs[i] ?? Number.POSITIVE_INFINITY)) {
        denied = true;
        // The store's wait (until the 1 ms taken off for rounding), counted down.
        const retryAfterMs = until + 1 - nowMs;
        return { ...r, cost, allowed: false, outcome: 'over_limit', retryAfterMs, resetMs };
      }
      if (!r.allowed && !r.shadow) {
        // This entry's wait is over (or the cost is lower): the store might admit it now.
        return { ...r, cost, allowed: true, outcome: 'allowed', retryAfterMs: 0, resetMs };
      }
      return { ...r, cost, retryAfterMs: Math.max(0, r.retryAfterMs - elapsedMs), resetMs };
    });
    return denied ? results : undefined;
  }

  /** Forgets every remembered set that contains one of `keys` (after a reset). */
  forget(keys: readonly string[]): void {
    if (keys.length === 0) return;
    const index = this.index;
    let slot = index.oldest;
    while (slot !== NO_SLOT) {
      const next = index.newerThan(slot);
      const setKey = index.keyOf(slot) as string;
      const parts = setKey.split('\n');
      if (keys.some((k) => parts.includes(k))) {
        index.delete(setKey);
        this.values[slot] = undefined;
      }
      slot = next;
    }
  }

  /** Forgets everything. */
  clear(): void {
    this.index.clear();
    this.values.length = 0;
  }
}
