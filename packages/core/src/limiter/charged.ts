/** What an allowed decision charged, and where: the one reading of it settle, slots and cancels share. */

import { holdsSlots } from '../algorithms/concurrency.js';
import { fallbackFailMode } from '../policy/lease.js';
import { chargedByRule } from '../stores/charge-rule.js';
import type { Decision, PolicyResult, SlotRef, StoreEntry, StoreVerdict } from '../types.js';

/** Where a reservation was charged: the store, or the local fallback (a `local` decision). */
export type SettleWhere = 'store' | 'local';

/** The entries a decision charged and the store that holds the charge. */
export interface Charged {
  readonly entries: readonly StoreEntry[];
  /** `store`: the store (or the leases taken from it); `local`: the local fallback's memory. */
  readonly where: SettleWhere;
}

/**
 * Exactly the entries `decision` charged (`chargedByRule`: with a shadow policy denying, the
 * enforced ones), of an allowed decision the store, its leases or the local fallback made (the
 * local fallback: its local entries only). Undefined when it charged nothing: denied, fail-open,
 * fail-closed, a deny-cache or local-stage answer.
 */
export function chargedOf(decision: Decision, entries: readonly StoreEntry[]): Charged | undefined {
  if (!decision.allowed) return undefined;
  let where: SettleWhere = 'store';
  let asked = entries;
  let verdicts: readonly PolicyResult[] = decision.results;
  if (decision.source === 'local') {
    // The local fallback decided the local entries alone, in one call of its own.
    asked = entries.filter((e) => fallbackFailMode(e.policy) === 'local');
    verdicts = decision.results.filter(
      (_r, i) => fallbackFailMode((entries[i] as StoreEntry).policy) === 'local',
    );
    where = 'local';
  } else if (decision.source !== 'store' && decision.source !== 'lease') return undefined;
  const flags = chargedByRule(asked, verdicts);
  const charged = asked.filter((_e, i) => flags[i]);
  return charged.length === 0 ? undefined : { entries: charged, where };
}

/** The concurrency slots among `charged` entries: each concurrency entry's key, policy and slot id. */
export function slotsOf(charged: readonly StoreEntry[]): SlotRef[] {
  const slots: SlotRef[] = [];
  for (const { key, policy, slotId } of charged) {
    if (holdsSlots(policy) && slotId !== undefined) slots.push({ key, policy, slotId });
  }
  return slots;
}

/** The slots a consuming store call of `entries` took, by its `verdicts` (`chargedByRule`). */
export function slotsTakenBy(entries: readonly StoreEntry[], verdicts: readonly StoreVerdict[]): SlotRef[] {
  const flags = chargedByRule(entries, verdicts);
  return slotsOf(entries.filter((_e, i) => flags[i]));
}
