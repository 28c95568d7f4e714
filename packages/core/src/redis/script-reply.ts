/**
 * The decide script's reply, decoded (lua/decide.lua holds the contract): four integers per entry
 * (allowed, remaining, resetMs, retryAfterMs; allowed with a retryAfterMs > 0: a waiting entry's
 * reserved turn, `waitMs`; allowed 2: banned), five for a lease take (`chargedUnits`) and a
 * concurrency entry (`reclaimed`). Web-standard: no `node:`.
 */
import { holdsSlots } from '../algorithms/concurrency.js';
import type { StoreEntry, StoreVerdict } from '../types.js';

/** Number of reply items per entry (a lease take and a concurrency entry have one more). */
export const REPLY_ITEMS_PER_ENTRY = 4;

/** Whether an entry's reply has a fifth item: a lease take's `chargedUnits`, a concurrency entry's `reclaimed`. */
export function hasFifthItem(entry: StoreEntry): boolean {
  return entry.leastCost !== undefined || holdsSlots(entry.policy);
}

/** Reply items of one decision's entries: four each, five for a lease take or a concurrency entry. */
export function replyItemsOf(entries: readonly StoreEntry[]): number {
  let items = entries.length * REPLY_ITEMS_PER_ENTRY;
  for (let i = 0; i < entries.length; i++) if (hasFifthItem(entries[i] as StoreEntry)) items += 1;
  return items;
}

function toNumber(value: unknown, what: string): number {
  const n = typeof value === 'number' ? value : typeof value === 'string' ? Number(value) : Number.NaN;
  if (Number.isNaN(n)) throw new Error(`store: unexpected decide script reply (${what})`);
  return n === 0 ? 0 : n; // no -0
}

/** Turns the decide script's reply to a call of ONE decision into one verdict per entry. */
export function decodeScriptReply(reply: unknown, entries: readonly StoreEntry[]): StoreVerdict[] {
  if (!Array.isArray(reply) || reply.length !== replyItemsOf(entries)) {
    throw new Error('store: unexpected decide script reply (shape)');
  }
  return decodeVerdicts(reply, entries, 0);
}

/**
 * One decision's verdicts from a reply whose shape the caller checked: the items from
 * `offset` on, four per entry.
 */
export function decodeVerdicts(
  reply: readonly unknown[],
  entries: readonly StoreEntry[],
  offset: number,
): StoreVerdict[] {
  const verdicts: StoreVerdict[] = [];
  let k = offset;
  for (let i = 0; i < entries.length; i++, k += REPLY_ITEMS_PER_ENTRY) {
    const allowed = reply[k];
    let verdict: StoreVerdict;
    if (allowed !== 0 && allowed !== 1 && allowed !== '0' && allowed !== '1') {
      if (allowed !== 2 && allowed !== '2')
        throw new Error('store: unexpected decide script reply (allowed)');
      verdict = bannedVerdict(reply, k);
    } else {
      verdict = {
        allowed: allowed === 1 || allowed === '1',
        remaining: toNumber(reply[k + 1], 'remaining'),
        resetMs: toNumber(reply[k + 2], 'resetMs'),
        retryAfterMs: toNumber(reply[k + 3], 'retryAfterMs'),
      };
      const waitMs = verdict.allowed ? verdict.retryAfterMs : 0; // allowed with a wait: a reserved turn
      if (waitMs > 0) verdict = { ...verdict, retryAfterMs: 0, waitMs };
    }
    const entry = entries[i] as StoreEntry;
    if (hasFifthItem(entry)) {
      const fifth = toNumber(reply[k + REPLY_ITEMS_PER_ENTRY], 'fifth item');
      if (entry.leastCost !== undefined) verdict = { ...verdict, chargedUnits: fifth };
      else if (fifth > 0) verdict = { ...verdict, reclaimedSlots: fifth };
      k += 1;
    }
    verdicts.push(verdict);
  }
  return verdicts;
}

/** The verdict of reply items from `k` whose `allowed` is 2: denied, the identity banned. */
function bannedVerdict(reply: readonly unknown[], k: number): StoreVerdict {
  return {
    allowed: false,
    remaining: toNumber(reply[k + 1], 'remaining'),
    resetMs: toNumber(reply[k + 2], 'resetMs'),
    retryAfterMs: toNumber(reply[k + 3], 'retryAfterMs'),
    banned: true,
  };
}
