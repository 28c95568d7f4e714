/**
 * The charge rule of one atomic store call, as lua/decide.lua (phase 2) and
 * `MemoryStore.decideSync` apply it, for the code that must know afterwards what a check charged
 * (`limiter.settle`). Web-standard: no `node:`.
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

/**
 * Which entries a consuming call charged, given whether each entry alone admitted its cost (a
 * banned entry did not): every entry when every entry allows; when only shadow entries deny, the
 * enforced ones; when an enforced entry denies, none. `verdicts` are in entry order.
 */
export function chargedByRule(
  entries: readonly StoreEntry[],
  verdicts: readonly { readonly allowed: boolean }[],
): boolean[] {
  let all = true;
  let enforced = true;
  for (let i = 0; i < entries.length; i++) {
    if (verdicts[i]?.allowed === true) continue;
    all = false;
    if (!(entries[i] as StoreEntry).policy.shadow) enforced = false;
  }
  return entries.map((e) => chargesEntry(e.policy.shadow, all, enforced));
}
