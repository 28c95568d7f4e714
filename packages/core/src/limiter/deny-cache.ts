/**
 * The local deny cache: after the store denied a set of keys until T, the same set of keys asked
 * again with the same or higher costs is denied in-process until T, without a store call.
 *
 * It never admits anything (a miss goes to the store) and it only denies what the store is
 * certain to deny: a denied request consumed nothing, other clients can only use up capacity,
 * and the store's `retryAfterMs` is the earliest moment the denying key could admit that cost.
 * Only enforcing (non-shadow) denials are remembered.
 */
import type { PolicyResult } from '../types.js';

interface Remembered {
  /** Costs of the remembered check, per entry. */
  readonly costs: readonly number[];
  /** Per entry: the time until which that entry's key denies that cost; 0 when it did not deny. */
  readonly untilMs: readonly number[];
  /** The latest of `untilMs`: past it, the memory is useless. */
  readonly expiresAtMs: number;
  readonly atMs: number;
  readonly results: readonly PolicyResult[];
}

/** Bounded memory of recent store denials, keyed by the exact set of storage keys of a check. */
export class DenyCache {
  private readonly entries = new Map<string, Remembered>();

  /** @param maxKeys most key sets remembered; the oldest is evicted first */
  constructor(private readonly maxKeys: number) {}

  /** Number of remembered key sets. */
  get size(): number {
    return this.entries.size;
  }

  /**
   * Remembers a denied check. `results` are in entry order; only entries that are not shadow and
   * did not allow count.
   */
  remember(setKey: string, costs: readonly number[], results: readonly PolicyResult[], nowMs: number): void {
    // Waits in results are rounded up to whole ms; 1 ms less keeps the rounding from ever
    // extending a denial past the moment the store would admit.
    const untilMs = results.map((r) =>
      !r.shadow && !r.allowed && r.retryAfterMs > 1 ? nowMs + r.retryAfterMs - 1 : 0,
    );
    const expiresAtMs = Math.max(0, ...untilMs);
    if (expiresAtMs <= nowMs) return;
    this.entries.delete(setKey);
    this.entries.set(setKey, { costs, untilMs, expiresAtMs, atMs: nowMs, results });
    while (this.entries.size > this.maxKeys) {
      const oldest = this.entries.keys().next();
      if (oldest.done) break;
      this.entries.delete(oldest.value);
    }
  }

  /**
   * The results to answer with when this check is certain to be denied, else undefined.
   * Denied entries carry the remaining wait; the others are the remembered results.
   */
  lookup(setKey: string, costs: readonly number[], nowMs: number): PolicyResult[] | undefined {
    const hit = this.entries.get(setKey);
    if (hit === undefined) return undefined;
    if (nowMs >= hit.expiresAtMs || nowMs < hit.atMs) {
      this.entries.delete(setKey);
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
        return { ...r, cost, allowed: false, outcome: 'over_limit', retryAfterMs: until - nowMs, resetMs };
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
    for (const setKey of this.entries.keys()) {
      const parts = setKey.split('\n');
      if (keys.some((k) => parts.includes(k))) this.entries.delete(setKey);
    }
  }

  /** Forgets everything. */
  clear(): void {
    this.entries.clear();
  }
}
