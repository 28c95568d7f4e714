/**
 * The settle script (lua/settle.lua + the algorithms' settle parts, embedded at build time) and
 * the codec between `StoreSettleEntry[]` and its KEYS/ARGV/reply. Web-standard: no `node:`.
 */
import { assertValidSettleEntries, waitsForTurn } from '../algorithms/validate.js';
import { SETTLE_SCRIPT_SHA1, SETTLE_SCRIPT_SOURCE } from '../generated/scripts.js';
import type { StoreSettleEntry } from '../types.js';
import { argsOf } from './script.js';

/**
 * The settle script (lua/settle.lua + the algorithm files): the actual cost of a reservation,
 * every entry of one decision in one call. KEYS and ARGV from `encodeSettle`.
 */
export const SETTLE_SCRIPT: { readonly source: string; readonly sha1: string } = Object.freeze({
  source: SETTLE_SCRIPT_SOURCE,
  sha1: SETTLE_SCRIPT_SHA1,
});

/**
 * KEYS and ARGV of a settle script call (lua/settle.lua): the entries' keys; the time (`nowArg`,
 * from `encodeScriptNow`), then per entry its algorithm, limit, windowMs, intervalMs, the units to
 * charge (actual - reserved; negative: a refund), the reserved units, and the ms since the check
 * was asked and since its answer came back (the reservation was charged in between), and when
 * some entry reserved a turn, each entry's wait for it (`waitMs`, '0' for none).
 */
export function encodeSettle(
  entries: readonly StoreSettleEntry[],
  nowArg: string,
): { keys: string[]; args: string[] } {
  assertValidSettleEntries(entries);
  const keys: string[] = [];
  const args: string[] = [nowArg];
  // A ninth item per entry only when a reserved turn is settled (lua/settle.lua takes 8 or 9).
  const waits = entries.some((e) => waitsForTurn(e.waitMs));
  for (const { key, policy, reservedUnits, actualUnits, reservedAgoMs, answeredAgoMs, waitMs } of entries) {
    keys.push(key);
    const [algorithm, limit, windowMs, intervalMs] = argsOf(policy);
    args.push(
      algorithm as string,
      limit as string,
      windowMs as string,
      intervalMs as string,
      String(actualUnits - reservedUnits),
      String(reservedUnits),
      String(reservedAgoMs),
      String(answeredAgoMs ?? reservedAgoMs),
    );
    if (waits) args.push(waitMs === undefined ? '0' : String(waitMs));
  }
  return { keys, args };
}

/** The settle script's reply: one flag per entry (true: settled). */
export function decodeSettleReply(reply: unknown, entries: readonly StoreSettleEntry[]): boolean[] {
  return decodeFlags(reply, entries.length, 'settle');
}

/** A reply of one flag (1 or 0) per item of a call to the `script` script ('settle', 'slots'). */
export function decodeFlags(reply: unknown, count: number, script: string): boolean[] {
  if (!Array.isArray(reply) || reply.length !== count) {
    throw new Error(`store: unexpected ${script} script reply (shape)`);
  }
  return reply.map((item) => {
    if (item !== 0 && item !== 1 && item !== '0' && item !== '1') {
      throw new Error(`store: unexpected ${script} script reply (flag)`);
    }
    return item === 1 || item === '1';
  });
}
