/**
 * The slots script (lua/slots.lua, embedded at build time): release or renew of concurrency slots,
 * and the codec between `SlotRef[]` and its KEYS/ARGV/reply. Web-standard: no `node:`.
 */
import { assertValidSlots } from '../algorithms/validate.js';
import { SLOTS_SCRIPT_SHA1, SLOTS_SCRIPT_SOURCE } from '../generated/scripts.js';
import type { SlotRef } from '../types.js';
import { hashSlotOf } from './key-slot.js';
import { decodeFlags } from './settle-script.js';
import type { ScriptTransport } from './transport.js';

/** The slots script: Lua source and its SHA1 (hex), for EVALSHA with EVAL as fallback. */
export const SLOTS_SCRIPT: { readonly source: string; readonly sha1: string } = Object.freeze({
  source: SLOTS_SCRIPT_SOURCE,
  sha1: SLOTS_SCRIPT_SHA1,
});

/** What the slots script does to each slot. */
export type SlotsMode = 'release' | 'renew';

/**
 * KEYS and ARGV of one slots script call (lua/slots.lua): the slots' keys; the time (`nowArg`,
 * from `encodeScriptNow`), the mode, then per slot its slotId and, to renew, its lease (the
 * policy's `windowMs`).
 */
export function encodeSlots(
  slots: readonly SlotRef[],
  mode: SlotsMode,
  nowArg: string,
): { keys: string[]; args: string[] } {
  const keys: string[] = [];
  const args: string[] = [nowArg, mode];
  for (const { key, policy, slotId } of slots) {
    keys.push(key);
    args.push(slotId);
    if (mode === 'renew') args.push(String(policy.windowMs));
  }
  return { keys, args };
}

/**
 * `slots` (validated) in the groups one call each can carry, in first-seen order: the positions of
 * each group's slots. By Cluster hash slot when `perHashSlot` (every call's keys in one slot); else
 * all in one group (a single Redis takes any keys in one call).
 */
export function groupByHashSlot(slots: readonly SlotRef[], perHashSlot = true): number[][] {
  assertValidSlots(slots);
  if (!perHashSlot) return [slots.map((_slot, i) => i)];
  const groups = new Map<number, number[]>();
  for (let i = 0; i < slots.length; i++) {
    const hash = hashSlotOf((slots[i] as SlotRef).key);
    const group = groups.get(hash);
    if (group === undefined) groups.set(hash, [i]);
    else group.push(i);
  }
  return [...groups.values()];
}

/**
 * Releases or renews `slots` through `transport`: one slots script call per hash slot (or one in
 * all when `perHashSlot` is false: a single Redis), all sent at once; the flags come back in the
 * order of `slots`. Rejects when any call fails.
 */
export async function runSlotsScript(
  transport: ScriptTransport,
  slots: readonly SlotRef[],
  mode: SlotsMode,
  nowArg: string,
  perHashSlot = true,
): Promise<boolean[]> {
  if (slots.length === 0) return [];
  const groups = groupByHashSlot(slots, perHashSlot);
  const replies = await Promise.all(
    groups.map((group) => {
      const { keys, args } = encodeSlots(
        group.map((i) => slots[i] as SlotRef),
        mode,
        nowArg,
      );
      return transport.run(SLOTS_SCRIPT, keys, args);
    }),
  );
  const flags: boolean[] = new Array(slots.length);
  for (let g = 0; g < groups.length; g++) {
    const group = groups[g] as number[];
    const held = decodeFlags(replies[g], group.length, 'slots');
    for (let k = 0; k < group.length; k++) flags[group[k] as number] = held[k] as boolean;
  }
  return flags;
}
