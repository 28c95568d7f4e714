/**
 * MemoryStore's concurrency slots over the state table, as lua/concurrency.lua (a consuming check
 * removes expired slots) and lua/slots.lua (release, renew) do over Redis. A key's state is its map
 * of slot id -> expiry (algorithms/concurrency.ts), changed in place: the table owns it.
 */
import { CONCURRENCY, countSlots, holdsSlots } from '../algorithms/concurrency.js';
import { ALGORITHMS, type Evaluation } from '../algorithms/index.js';
import { wholeWaitMs } from '../algorithms/types.js';
import { assertValidSlots } from '../algorithms/validate.js';
import type { SlotRef, StoreEntry, StoreVerdict } from '../types.js';
import { chargedByRule, chargesEntry } from './charge-rule.js';
import type { StateTable } from './memory-store-table.js';

/** The slots of `key` at `now` (undefined: none, or another algorithm's state), as a map the table owns. */
function slotsOf(table: StateTable, key: string, now: number): Map<string, number> | undefined {
  return table.read(key, CONCURRENCY, now) as Map<string, number> | undefined;
}

/** Removes the expired slots of `key` (a consuming check that charged nothing there); a key left empty goes. */
export function reclaimSlots(table: StateTable, key: string, now: number): void {
  const slots = slotsOf(table, key, now);
  if (slots === undefined) return;
  for (const [slot, expiry] of slots) if (expiry <= now) slots.delete(slot);
  if (slots.size === 0) table.delete(key);
}

/** Frees `slots` (see `Store.releaseSlots`); one flag per slot: true where it was held (live). */
export function releaseInTable(table: StateTable, slots: readonly SlotRef[], now: number): boolean[] {
  assertValidSlots(slots);
  return slots.map(({ key, slotId }) => {
    const held = slotsOf(table, key, now);
    const expiry = held?.get(slotId);
    if (held === undefined || expiry === undefined) return false;
    held.delete(slotId);
    if (held.size === 0) table.delete(key);
    return expiry > now;
  });
}

/**
 * Renews `slots` to `now` + their policy's lease where still held (see `Store.renewSlots`); the key
 * is kept until its latest slot's expiry + 1 ms (rounded up), as lua/slots.lua sets its TTL. One
 * flag per slot: false where lost.
 */
export function renewInTable(table: StateTable, slots: readonly SlotRef[], now: number): boolean[] {
  assertValidSlots(slots);
  return slots.map(({ key, policy, slotId }) => {
    const held = slotsOf(table, key, now);
    const expiry = held?.get(slotId);
    if (held === undefined || expiry === undefined || !(expiry > now)) return false;
    held.set(slotId, now + policy.windowMs);
    // The renewed slot is live, so the latest live expiry is the key's latest.
    table.write(key, CONCURRENCY, held, now + Math.ceil(countSlots(held, now).latestMs - now) + 1, now);
    return true;
  });
}

/**
 * A replayed decision's slots (an idempotent check's record, `verdicts` its copies, changed in
 * place), as lua/decide.lua's `replay_slots`: a slot is held by the check that took it, so the
 * concurrency entries the recorded decision charged are decided again now with `entries`' slot ids,
 * taken all or nothing as a check charges them, and replied as decided now (allowed with the slot
 * taken, or denied: the replay admits nothing then). Returns `verdicts`.
 */
export function replaySlots(
  table: StateTable,
  entries: readonly StoreEntry[],
  verdicts: StoreVerdict[],
  now: number,
): StoreVerdict[] {
  const charged = chargedByRule(entries, verdicts);
  const again: [number, Evaluation<unknown>][] = [];
  let all = true;
  let enforced = true;
  for (let i = 0; i < entries.length; i++) {
    const { key, policy, slotId } = entries[i] as StoreEntry;
    if (!holdsSlots(policy) || !charged[i]) continue;
    const { limit, windowMs, intervalMs } = policy;
    const state = table.read(key, CONCURRENCY, now);
    const e = ALGORITHMS[CONCURRENCY].evaluate(state, now, { limit, windowMs, intervalMs, cost: 1, slotId });
    again.push([i, e]);
    if (!e.allowed) {
      all = false;
      if (!policy.shadow) enforced = false;
    }
  }
  for (const [i, e] of again) {
    const { key, policy } = entries[i] as StoreEntry;
    const charge = chargesEntry(policy.shadow, all, enforced);
    if (charge) table.write(key, CONCURRENCY, e.charge(), now + Math.ceil(e.chargedResetMs) + 1, now);
    else reclaimSlots(table, key, now);
    const verdict: StoreVerdict = {
      allowed: e.allowed,
      remaining: charge ? e.chargedRemaining : e.remaining,
      resetMs: Math.ceil(charge ? e.chargedResetMs : e.resetMs),
      retryAfterMs: wholeWaitMs(e.retryAfterMs),
    };
    const reclaimed = e.reclaimedSlots as number;
    verdicts[i] = reclaimed > 0 ? { ...verdict, reclaimedSlots: reclaimed } : verdict;
  }
  return verdicts;
}
