/**
 * The one rule for every in-process memory of a denial (the deny cache, a leased policy's denied
 * take, the local stage's view of the store): a denial seen at `atMs` that lasts until `untilMs` is
 * remembered until the earlier of `untilMs` and `atMs + maxAgeMs`, forgotten at once when this
 * instance resets its key or a settle refunds it, and forgotten when the clock reads earlier than
 * `atMs`. The deny cache, the lease step and the local stage share one `DenialMemory` per limiter:
 * what the store last said of each key (its verdict, the wait it told, when), whichever step asked.
 *
 * Why a maximum age: a reset on another instance deletes the state in the store, which no
 * in-process memory can see. Each memory goes back to the store at least every `maxAgeMs`
 * (`denyCache.maxAgeMs`, 1 s by default), so a reset made anywhere is seen everywhere that fast.
 */

import { holdsSlots } from '../algorithms/concurrency.js';
import { LruIndex } from '../stores/lru-index.js';
import type { CompiledPolicy } from '../types.js';

/**
 * Whether what the store says of `policy`'s keys may be remembered, by every step that remembers
 * (the deny cache, the local stage's view of the store): never a concurrency policy's, since a slot
 * may be released at any moment, so a remembered denial would outlive the slot it was about.
 */
export function remembersKeysOf(policy: CompiledPolicy): boolean {
  return !holdsSlots(policy);
}

/** Until when a denial seen at `atMs`, lasting until `untilMs`, may be remembered (ms). */
export function rememberedUntilMs(atMs: number, untilMs: number, maxAgeMs: number): number {
  return Math.min(untilMs, atMs + maxAgeMs);
}

/** Whether a memory made at `atMs` and kept until `expiresAtMs` still holds at `nowMs`. */
export function stillRemembered(nowMs: number, atMs: number, expiresAtMs: number): boolean {
  return nowMs >= atMs && nowMs < expiresAtMs;
}

/** What the store said of a key, as a verdict reports it. */
export interface StoreView {
  readonly allowed: boolean;
  readonly remaining: number;
  readonly resetMs: number;
  readonly retryAfterMs: number;
  readonly banned?: true;
}

/** One key's remembered denial. */
export interface Denial {
  /** When the denied call was asked (ms). */
  readonly atMs: number;
  /** When the key admits `units` again, as the store said (ms). */
  readonly untilMs: number;
  /** The least units denied: a request of as many or more is denied too. */
  readonly units: number;
  /** What the store said of the key at `atMs`: its verdict's fields (`banned` false when absent). */
  readonly allowed: boolean;
  readonly remaining: number;
  readonly resetMs: number;
  readonly retryAfterMs: number;
  readonly banned: boolean;
  /** The end of the memory: `rememberedUntilMs` of the above, or of the check it was seen in. */
  readonly expiresAtMs: number;
  /**
   * Whether the store certainly denies `units` until `untilMs` (a denial it gave); false for a
   * bound (more than the units left waits at most until the quota is full again) or no wait.
   */
  readonly certain: boolean;
}

/** A denial as held: updated in place when its key is remembered again. */
type Held = { -readonly [F in keyof Denial]: Denial[F] };

/**
 * Denials by state key, at most `maxKeys` (the key remembered first goes first; remembering a key
 * again updates it in place, no allocation), each kept by {@link rememberedUntilMs}. No timers: a
 * stale one is dropped when looked up. The order is an `LruIndex`: no Map is iterated to evict.
 */
export class DenialMemory {
  readonly #index: LruIndex;
  /** The denial in each slot of `#index`. */
  readonly #bySlot: (Held | undefined)[] = [];

  /**
   * @param maxKeys most keys remembered at once
   * @param maxAgeMs longest a denial is remembered (ms): how long a reset elsewhere can go unseen
   */
  constructor(
    private readonly maxKeys: number,
    readonly maxAgeMs: number,
  ) {
    this.#index = new LruIndex(maxKeys);
  }

  /**
   * Remembers that `key` denies `units` or more until `untilMs`, seen at `atMs` with the store's
   * verdict `view`. `keptUntilMs` (default `untilMs`) is how long the check it was seen in wants it
   * kept, at most `maxAgeMs`.
   */
  remember(
    key: string,
    units: number,
    atMs: number,
    untilMs: number,
    view: StoreView,
    keptUntilMs = untilMs,
  ): void {
    this.#keep(key, units, atMs, untilMs, view, true, keptUntilMs);
  }

  /**
   * Remembers what the store said of `key` for a request of `cost` at `atMs`, by the one rule:
   * a denied cost waits the verdict's `retryAfterMs`; more than the whole units left waits at most
   * until the quota is full again (`resetMs`: a bound the local stage tells, never a denial
   * `lookup` answers); else there is no wait to tell.
   */
  rememberVerdict(key: string, cost: number, atMs: number, verdict: StoreView, keptUntilMs?: number): void {
    if (!verdict.allowed && verdict.retryAfterMs > 0) {
      const untilMs = atMs + verdict.retryAfterMs;
      this.#keep(key, cost, atMs, untilMs, verdict, true, keptUntilMs ?? untilMs);
    } else if (verdict.allowed && verdict.resetMs > 0) {
      const untilMs = atMs + verdict.resetMs;
      // Whole units left, as the client is told; a request of more waits at most for a full quota.
      const left = Math.floor(verdict.remaining + 1e-9);
      this.#keep(key, left + 1e-6, atMs, untilMs, verdict, false, keptUntilMs ?? untilMs);
    } else {
      const never = Number.POSITIVE_INFINITY;
      this.#keep(key, never, atMs, never, verdict, false, keptUntilMs ?? never);
    }
  }

  #keep(
    key: string,
    units: number,
    atMs: number,
    untilMs: number,
    view: StoreView,
    certain: boolean,
    keptUntilMs: number,
  ): void {
    const expiresAtMs = rememberedUntilMs(atMs, keptUntilMs, this.maxAgeMs);
    const held = this.#get(key);
    if (expiresAtMs <= atMs) {
      if (held !== undefined) this.#delete(key);
      return;
    }
    if (held !== undefined) {
      held.atMs = atMs;
      held.untilMs = untilMs;
      held.units = units;
      held.allowed = view.allowed;
      held.remaining = view.remaining;
      held.resetMs = view.resetMs;
      held.retryAfterMs = view.retryAfterMs;
      held.banned = view.banned === true;
      held.expiresAtMs = expiresAtMs;
      held.certain = certain;
      return;
    }
    const index = this.#index;
    if (index.size >= this.maxKeys) this.#delete(index.keyOf(index.oldest) as string);
    const { allowed, remaining, resetMs, retryAfterMs } = view;
    const banned = view.banned === true;
    this.#bySlot[index.add(key)] = {
      atMs,
      untilMs,
      units,
      allowed,
      remaining,
      resetMs,
      retryAfterMs,
      banned,
      expiresAtMs,
      certain,
    };
  }

  /** The denial the store gave `key` that still holds at `nowMs` for a request of `units`, else undefined. */
  lookup(key: string, units: number, nowMs: number): Denial | undefined {
    const denial = this.#live(key, nowMs);
    return denial?.certain === true && units + 1e-9 >= denial.units ? denial : undefined;
  }

  /** The denial or the bound on the wait of `key` that still holds at `nowMs` for a request of `units`. */
  waitFor(key: string, units: number, nowMs: number): Denial | undefined {
    const denial = this.#live(key, nowMs);
    return denial !== undefined && units + 1e-9 >= denial.units ? denial : undefined;
  }

  /** Whether something seen of `key` (a denial, or no wait) still holds at `nowMs`. */
  knows(key: string, nowMs: number): boolean {
    return this.#live(key, nowMs) !== undefined;
  }

  /** Whatever is remembered of `key` that still holds at `nowMs` (a denial, a bound or no wait), else undefined. */
  seen(key: string, nowMs: number): Denial | undefined {
    return this.#live(key, nowMs);
  }

  #get(key: string): Held | undefined {
    const slot = this.#index.slotOf(key);
    return slot === undefined ? undefined : this.#bySlot[slot];
  }

  #delete(key: string): void {
    const slot = this.#index.delete(key);
    if (slot !== undefined) this.#bySlot[slot] = undefined;
  }

  #live(key: string, nowMs: number): Denial | undefined {
    const denial = this.#get(key);
    if (denial === undefined || stillRemembered(nowMs, denial.atMs, denial.expiresAtMs)) return denial;
    this.#delete(key);
    return undefined;
  }

  /** Forgets the denials of `keys` (a reset on this instance, or a key seen admitting again). */
  forget(keys: readonly string[]): void {
    for (const key of keys) this.#delete(key);
  }

  /** Keys remembered (stale ones included until looked up). */
  get size(): number {
    return this.#index.size;
  }

  /** Slots the recency list visited so far (for tests counting work per call). */
  get visitedSlots(): number {
    return this.#index.visitedSlots;
  }
}
