/**
 * What the process remembers of a store's denial, and the deny cache: the step of a check that
 * answers from it.
 *
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
 *
 * The local deny cache: after the store denied a key of a check until T, a check holding that key
 * with the same or a higher cost on it is denied in-process until T, without a store call.
 *
 * It remembers per key, in the limiter's one memory of denials (`DenialMemory`, shared with the
 * leases and the local stage): what the store said of each key of a denied check, its wait, when.
 * It never admits anything (a miss goes to the store) and it only denies what the store is certain
 * to deny: a denied request consumed nothing, other clients can only use up capacity, and the
 * store's `retryAfterMs` is the earliest moment the denying key could admit that cost. Only an
 * enforcing (non-shadow) denial answers a check, and only when every key of the check is
 * remembered (the other policies' results come from what the store last said of their keys).
 * A concurrency policy's keys are never remembered, by this step or any other (`remembersKeysOf`):
 * a check holding one always goes to the store.
 *
 * Two bounds keep a remembered denial honest. A wait is never taken as longer than the policy's
 * longest possible wait (state written by another algorithm, or a clock that went backwards,
 * must not turn into a denial of hours); a ban's wait is the store's, the rest of its block. And a
 * denied check's keys are remembered by the rule every in-process memory of a denial keeps
 * (`rememberedUntilMs`): until its latest wait, at most `maxAgeMs` (default 1 s), so after a reset
 * on another instance every instance is back at the store within `maxAgeMs`. A denial answered
 * from here tells the store's own wait counted down: a client that waits it is past the moment the
 * store admits.
 */
import { holdsSlots } from '../algorithms/concurrency.js';
import { ALGORITHMS } from '../algorithms/registry.js';
import { enforcedAllow } from '../stores/charge-rule.js';
import { LruIndex } from '../stores/lru-index.js';
import type { Algorithm, CompiledPolicy, PolicyResult, StoreEntry, StoreVerdict } from '../types.js';
import type { RememberedDenialSource } from './counters.js';
import { resultFromVerdict } from './decision.js';
import { type StoreAnswer, StoreUnavailable, type StoreVerdicts } from './store-answer.js';

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

/**
 * The longest wait a policy can ask for, in ms: its algorithm's `longestWaitWindows` windows
 * (a window for the fixed window and the sliding log; two for the sliding window counter, whose
 * previous window still weighs during the current one, and for the token bucket and GCRA, a full
 * refill and the repaying of a settle's debt of one limit).
 */
export function longestWaitMs(algorithm: Algorithm, windowMs: number): number {
  return Math.ceil(ALGORITHMS[algorithm].windows.longestWaitWindows * windowMs);
}

/** A denial's wait as the deny cache believes it (ms): the store's, at most the policy's longest unless banned. */
function believedWaitMs(policy: CompiledPolicy, retryAfterMs: number, banned: boolean): number {
  // A ban's wait is the rest of its block, which the store keeps apart from the policy's state.
  return banned ? retryAfterMs : Math.min(retryAfterMs, longestWaitMs(policy.algorithm, policy.windowMs));
}

/**
 * Until when the deny cache denies from `denial` (ms, exclusive): the end of the believed wait less
 * 1 ms, so the rounding of waits to whole ms never extends a denial past the moment the store admits.
 */
function deniedUntilMs(policy: CompiledPolicy, denial: Denial): number {
  const waitMs = believedWaitMs(policy, denial.untilMs - denial.atMs, denial.banned);
  return denial.atMs + waitMs - 1;
}

/**
 * Remembers a check the store answered with `verdicts` (in entry order) at `atMs`: each key's
 * verdict, kept until the check's latest enforced denial ends (at most `maxAgeMs`). Returns
 * whether anything was remembered: a check with no enforced denial of more than 1 ms is not.
 */
export function rememberDenied(
  memory: DenialMemory,
  entries: readonly StoreEntry[],
  verdicts: readonly StoreVerdict[],
  atMs: number,
): boolean {
  let latestMs = 0;
  for (let i = 0; i < entries.length; i++) {
    const { policy } = entries[i] as StoreEntry;
    const verdict = verdicts[i] as StoreVerdict;
    // Waits are told in whole ms, rounded up, as a result reports them.
    const retryAfterMs = Math.ceil(verdict.retryAfterMs);
    if (policy.shadow || verdict.allowed || !(retryAfterMs > 1) || !remembersKeysOf(policy)) continue;
    const untilMs = atMs + believedWaitMs(policy, retryAfterMs, verdict.banned === true) - 1;
    if (untilMs > latestMs) latestMs = untilMs;
  }
  if (rememberedUntilMs(atMs, latestMs, memory.maxAgeMs) <= atMs) return false;
  for (let i = 0; i < entries.length; i++) {
    const { key, policy, cost } = entries[i] as StoreEntry;
    if (!remembersKeysOf(policy)) continue;
    const verdict = verdicts[i] as StoreVerdict;
    const retryAfterMs = Math.ceil(verdict.retryAfterMs);
    if (!policy.shadow && !verdict.allowed && retryAfterMs > 1) {
      const untilMs = atMs + believedWaitMs(policy, retryAfterMs, verdict.banned === true);
      memory.remember(key, cost, atMs, untilMs, verdict, latestMs);
    } else memory.rememberVerdict(key, cost, atMs, verdict, latestMs);
  }
  return true;
}

/**
 * The results to answer a check with when the memory is certain the store denies it at `nowMs`,
 * else undefined (a key of the check not remembered, or no enforced denial still holding for its
 * cost). Every wait and reset is counted down from the moment its key was remembered; a denied
 * entry tells the store's wait, counted down; an enforced entry whose wait is over (or whose cost
 * is lower than the one denied) might fit now, so it reads allowed.
 */
export function deniedFromMemory(
  memory: DenialMemory,
  entries: readonly StoreEntry[],
  nowMs: number,
): PolicyResult[] | undefined {
  let denied = false;
  const seenOf = SEEN;
  const untilOf = DENIED_UNTIL_MS;
  for (let i = 0; i < entries.length; i++) {
    const { key, policy, cost } = entries[i] as StoreEntry;
    const seen = memory.seen(key, nowMs);
    if (seen === undefined) return undefined;
    const untilMs = deniesAtMs(policy, cost, seen, nowMs);
    seenOf[i] = seen;
    untilOf[i] = untilMs;
    if (untilMs !== NO_DENIAL) denied = true;
  }
  if (!denied) return undefined;
  const results: PolicyResult[] = [];
  for (let i = 0; i < entries.length; i++) {
    const { policy, cost } = entries[i] as StoreEntry;
    results.push(resultAt(policy, cost, seenOf[i] as Denial, untilOf[i] as number, nowMs));
    seenOf[i] = undefined;
  }
  return results;
}

/** What `deniedFromMemory` found of each key, and until when it denies, between its two passes (it never awaits). */
const SEEN: (Denial | undefined)[] = [];
const DENIED_UNTIL_MS: number[] = [];

/** `deniesAtMs` of a key that does not deny. */
const NO_DENIAL = Number.NEGATIVE_INFINITY;

/** Until when `seen` denies an enforced `policy`'s `cost` for certain (ms, exclusive), or `NO_DENIAL` at `nowMs`. */
function deniesAtMs(policy: CompiledPolicy, cost: number, seen: Denial, nowMs: number): number {
  if (policy.shadow || !seen.certain || seen.allowed || cost < seen.units) return NO_DENIAL;
  const untilMs = deniedUntilMs(policy, seen);
  return untilMs > nowMs ? untilMs : NO_DENIAL;
}

/** One entry's result from what was seen of its key, counted down to `nowMs`; `deniedUntil` from `deniesAtMs`. */
function resultAt(
  policy: CompiledPolicy,
  cost: number,
  seen: Denial,
  deniedUntil: number,
  nowMs: number,
): PolicyResult {
  const elapsedMs = nowMs - seen.atMs;
  // A Denial holds every field of a verdict (`banned` as a boolean, which the result reads as such).
  const verdict = seen as unknown as StoreVerdict;
  const result = resultFromVerdict(policy, cost, verdict) as {
    -readonly [F in keyof PolicyResult]: PolicyResult[F];
  };
  result.resetMs = Math.max(0, result.resetMs - elapsedMs);
  if (deniedUntil !== NO_DENIAL) {
    // The store's wait (until the 1 ms taken off for rounding), counted down.
    result.retryAfterMs = deniedUntil + 1 - nowMs;
  } else if (!result.allowed && !policy.shadow) {
    // This entry's wait is over (or the cost is lower): the store might admit it now.
    result.allowed = true;
    result.outcome = 'allowed';
    result.retryAfterMs = 0;
  } else result.retryAfterMs = Math.max(0, result.retryAfterMs - elapsedMs);
  return result;
}

/**
 * A consuming check first asks the limiter's memory of denials: a hit answers with source
 * `deny-cache` and never reaches the store (it only denies what the store is certain to deny, see
 * `deniedFromMemory`). An answer with an enforced denial (the check charged nothing) is remembered, key
 * by key, from the moment the check was asked. An idempotent check skips the lookup, so a retry
 * gets its recorded answer; peeks skip the step. A reset or a refund forgets its keys in the
 * memory (one rule for every source). Each denial remembered counts in `remembered`.
 */
export class DenyCacheStep {
  constructor(
    private readonly memory: DenialMemory,
    private readonly remembered?: Record<RememberedDenialSource, number>,
  ) {}

  /** The remembered denial of this check at `nowMs`, or undefined (ask on). */
  answer(entries: readonly StoreEntry[], nowMs: number): StoreVerdicts | undefined {
    if (this.memory.size === 0) return undefined;
    const cached = deniedFromMemory(this.memory, entries, nowMs);
    // A result holds every field of a verdict, so it serves as both.
    return cached === undefined ? undefined : { source: 'deny-cache', verdicts: cached, results: cached };
  }

  /** Remembers `answer` when an enforced entry was denied; `askedAtMs` is when the check asked. */
  remember(entries: readonly StoreEntry[], answer: StoreAnswer, askedAtMs: number): void {
    if (answer instanceof StoreUnavailable || enforcedAllow(entries, answer.verdicts)) return;
    const remembered = rememberDenied(this.memory, entries, answer.verdicts, askedAtMs);
    if (remembered && this.remembered !== undefined) this.remembered['deny-cache']++;
  }
}
