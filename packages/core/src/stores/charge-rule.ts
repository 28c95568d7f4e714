/**
 * The charge rule of one atomic store call, as lua/decide.lua (phase 2) and
 * `MemoryStore.decideSync` apply it, for the code that must know afterwards what a check charged
 * (`limiter.settle`, the deny cache, leases). Web-standard: no `node:`.
 */
import type { StoreEntry } from '../types.js';

/**
 * Whether a consuming call charges one entry: a shadow entry when every entry allows
 * (`allAllow`), an enforced one when every enforced entry allows (`enforcedAllow`). The one
 * TypeScript copy of lua/decide.lua's rule; `MemoryStore` and `chargedByRule` both ask it.
 */
export function chargesEntry(shadow: boolean, allAllow: boolean, enforcedAllow: boolean): boolean {
  return shadow ? allAllow : enforcedAllow;
}

/** Whether every enforced (non-shadow) entry admitted its cost: the check charges its enforced entries. */
export function enforcedAllow(
  entries: readonly StoreEntry[],
  verdicts: readonly { readonly allowed: boolean }[],
): boolean {
  for (let i = 0; i < entries.length; i++)
    if (verdicts[i]?.allowed !== true && !(entries[i] as StoreEntry).policy.shadow) return false;
  return true;
}

/** Whether every entry admitted its cost: the check charges its shadow entries too. */
export function allAllow(verdicts: readonly { readonly allowed: boolean }[], count: number): boolean {
  for (let i = 0; i < count; i++) if (verdicts[i]?.allowed !== true) return false;
  return true;
}

/**
 * Which entries a consuming call charged, given whether each entry alone admitted its cost (a
 * banned entry did not): every entry when every entry allows; when only shadow entries deny, the
 * enforced ones; when an enforced entry denies, none. `verdicts` are in entry order.
 */
export function chargedByRule(
  entries: readonly StoreEntry[],
  verdicts: readonly { readonly allowed: boolean }[],
): boolean[] {
  const all = allAllow(verdicts, entries.length);
  const enforced = all || enforcedAllow(entries, verdicts);
  return entries.map((e) => chargesEntry(e.policy.shadow, all, enforced));
}
