/**
 * Concurrency slots a limiter's checks took: held from the decision until `release`, renewed
 * before their lease runs out (timed on the monotonic clock: a wall clock set back never delays a
 * renewal), and reported when a renewal finds one gone.
 */

import { timerDelay } from '../monotonic.js';
import type { Clock, Decision, SlotLostEvent, SlotRef, Store, StoreEntry, StoreVerdict } from '../types.js';
import type { SettleWhere } from './charged.js';
import { chargedOf, slotsOf } from './charged.js';
import { OverloadCounts } from './counters.js';
import type { Steps } from './steps.js';

/** The local fallback's in-process store, where slots of `failMode: 'local'` decisions are held. */
const localStore = (fallback: Steps['fallback']): Store | undefined => fallback?.memory;

/** The slots of one decision, where they are held and when they are renewed next. */
interface Holding {
  readonly decision: Decision;
  slots: SlotRef[];
  readonly where: SettleWhere;
  /** The limiter's monotonic clock at which these slots are renewed next. */
  renewAtMs: number;
  /** The shortest lease of its slots, in ms. */
  readonly leaseMs: number;
}

/** A slot is renewed once half its lease has passed: a renewal late by up to half a lease is still in time. */
const RENEW_AFTER_LEASE = 0.5;

/** The renewals due within this fraction of a lease of the first ride along in the same store call. */
const RENEW_BATCH_LEASE = 0.25;

/**
 * The slots held by this limiter's decisions, by Decision object (the decision stays plain data).
 * One timer for all of them renews the slots due, in one store call; a slot a renewal finds gone is
 * dropped and reported (`onSlotLost`, `counts.lost`), never taken again.
 */
export class HeldSlots {
  readonly #byDecision = new WeakMap<Decision, Holding>();
  readonly #live = new Set<Holding>();
  #timer: ReturnType<typeof setTimeout> | undefined;
  #timerAtMs = Number.POSITIVE_INFINITY;
  /** A unique prefix of this limiter's slot ids (random; no identity in it). */
  readonly #idPrefix: string;
  #idCount = 0;

  /**
   * @param clock the limiter's monotonic clock (`monotonicNow`): a wall clock set back would stop renewals
   * @param stepsOf the limiter's current steps (the store call, the local fallback)
   * @param counts the limiter's overload counters
   * @param lostListeners called once per lost slot
   */
  constructor(
    private readonly clock: Clock,
    private readonly stepsOf: () => Steps,
    private readonly counts: OverloadCounts,
    private readonly lostListeners: ReadonlySet<(event: SlotLostEvent) => void>,
  ) {
    this.#idPrefix = `${globalThis.crypto.randomUUID().replaceAll('-', '').slice(0, 16)}.`;
  }

  /** A slot id no other check of any instance uses. */
  nextSlotId(): string {
    this.#idCount++;
    return this.#idPrefix + this.#idCount.toString(36);
  }

  /** Counts the expired slots the store removed while deciding `entries` (`reclaimedSlots`). */
  countReclaimed(entries: readonly StoreEntry[], verdicts: readonly StoreVerdict[]): void {
    for (let i = 0; i < entries.length; i++) {
      const reclaimed = verdicts[i]?.reclaimedSlots;
      if (reclaimed !== undefined && reclaimed > 0) {
        OverloadCounts.add(this.counts.reclaimed, (entries[i] as StoreEntry).policy.name, reclaimed);
      }
    }
  }

  /** Keeps the slots `decision` took (none when it was denied or took none), to renew and release. */
  keep(decision: Decision, entries: readonly StoreEntry[]): void {
    const charged = chargedOf(decision, entries);
    if (charged === undefined) return;
    const slots = slotsOf(charged.entries);
    if (slots.length === 0) return;
    let leaseMs = Number.POSITIVE_INFINITY;
    for (const { policy } of slots) {
      leaseMs = Math.min(leaseMs, policy.windowMs);
      OverloadCounts.add(this.counts.held, policy.name, 1);
    }
    const holding: Holding = {
      decision,
      slots,
      where: charged.where,
      renewAtMs: this.clock() + leaseMs * RENEW_AFTER_LEASE,
      leaseMs,
    };
    this.#byDecision.set(decision, holding);
    this.#live.add(holding);
    this.#schedule(holding.renewAtMs);
  }

  /** True while `decision` holds slots (taken and not yet released). */
  holds(decision: Decision): boolean {
    return this.#byDecision.has(decision);
  }

  /** Frees the slots `decision` holds, once: later calls, and calls for a decision without slots, do nothing. */
  async release(decision: Decision): Promise<void> {
    const holding = this.#byDecision.get(decision);
    if (holding !== undefined) await this.#free(holding);
  }

  /** Frees every slot held (`limiter.close()`) and stops the renewals. */
  async releaseAll(): Promise<void> {
    const all = [...this.#live];
    this.#stopTimer();
    await Promise.all(all.map((holding) => this.#free(holding)));
  }

  /** Renewals stop before the release is sent, so a renewal never outlives it. */
  async #free(holding: Holding): Promise<void> {
    if (!this.#live.delete(holding)) return;
    this.#byDecision.delete(holding.decision);
    for (const slot of holding.slots) OverloadCounts.add(this.counts.held, slot.policy.name, -1);
    if (this.#live.size === 0) this.#stopTimer();
    if (holding.slots.length === 0) return;
    const { store, fallback } = this.stepsOf();
    if (holding.where === 'local') localStore(fallback)?.releaseSlotsSync?.(holding.slots);
    else await store.slots('release', holding.slots);
  }

  /**
   * Arms the one timer for `atMs` unless it fires earlier already; it never keeps a process alive.
   * One due past the longest delay a timer takes fires before, finds nothing due, and is armed again.
   */
  #schedule(atMs: number): void {
    if (this.#timer !== undefined && this.#timerAtMs <= atMs) return;
    this.#stopTimer();
    this.#timerAtMs = atMs;
    const timer = setTimeout(() => void this.#renewDue(), timerDelay(atMs - this.clock()));
    (timer as { unref?: () => void }).unref?.();
    this.#timer = timer;
  }

  #stopTimer(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerAtMs = Number.POSITIVE_INFINITY;
  }

  /**
   * Renews every slot due (and those due within a quarter lease of now) in one call per store;
   * a slot the store no longer holds is lost: dropped, counted and reported. Then re-arms the timer.
   */
  async #renewDue(): Promise<void> {
    this.#timer = undefined;
    this.#timerAtMs = Number.POSITIVE_INFINITY;
    const nowMs = this.clock();
    const due: Holding[] = [];
    for (const holding of this.#live) {
      if (holding.renewAtMs <= nowMs + holding.leaseMs * RENEW_BATCH_LEASE) due.push(holding);
    }
    try {
      await Promise.all([this.#renew(due, 'store'), this.#renew(due, 'local')]);
    } catch {
      // A renewal that threw (a store that throws rather than rejects) is tried again as a failure.
      for (const holding of due) holding.renewAtMs = nowMs + holding.leaseMs * RENEW_BATCH_LEASE;
    }
    let next = Number.POSITIVE_INFINITY;
    for (const holding of this.#live) next = Math.min(next, holding.renewAtMs);
    if (next !== Number.POSITIVE_INFINITY) this.#schedule(next);
  }

  async #renew(due: readonly Holding[], where: SettleWhere): Promise<void> {
    const holdings = due.filter((h) => h.where === where && h.slots.length > 0);
    if (holdings.length === 0) return;
    const slots = holdings.flatMap((h) => h.slots);
    const { store, fallback } = this.stepsOf();
    // The store renews at its now, at or after this: the next renewal is due half a lease after it.
    const sentAtMs = this.clock();
    const flags =
      where === 'local' ? localStore(fallback)?.renewSlotsSync?.(slots) : await store.slots('renew', slots);
    let at = 0;
    for (const holding of holdings) {
      const count = holding.slots.length;
      // A failed renewal is tried again soon: the slot may still be held.
      holding.renewAtMs =
        sentAtMs + holding.leaseMs * (flags === undefined ? RENEW_BATCH_LEASE : RENEW_AFTER_LEASE);
      if (flags !== undefined && this.#live.has(holding)) {
        holding.slots = holding.slots.filter((slot, i) => flags[at + i] !== false || this.#lost(slot));
      }
      at += count;
    }
  }

  /** A slot a renewal found gone: counted and reported; false, so the caller drops it. */
  #lost(slot: SlotRef): false {
    const policy = slot.policy.name;
    OverloadCounts.add(this.counts.held, policy, -1);
    OverloadCounts.add(this.counts.lost, policy, 1);
    const event: SlotLostEvent = { policy };
    for (const listener of this.lostListeners) {
      try {
        listener(event);
      } catch {
        // A listener's failure must not stop the others.
      }
    }
    return false;
  }
}
