/**
 * MemoryStore's concurrency slots over the state table, as lua/concurrency.lua (a consuming check
 * removes expired slots) and lua/slots.lua (release, renew) do over Redis. A key's state is its map
 * of slot id -> expiry (algorithms/concurrency.ts), changed in place: the table owns it.
 */
import { CONCURRENCY, countSlots } from '../algorithms/concurrency.js';
import { assertValidSlots } from '../algorithms/validate.js';
import type { SlotRef } from '../types.js';
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
