/** MemoryStore's settle: each algorithm's `settle` over the state table, as lua/settle.lua does over Redis. */
import { ALGORITHMS } from '../algorithms/registry.js';
import { assertValidSettleEntries } from '../algorithms/validate.js';
import type { StoreSettleEntry } from '../types.js';
import type { StateTable } from './memory-store-table.js';

/** Same ceiling as lua/settle.lua MAX_TTL_MS. */
const MAX_TTL_MS = 1e15;

/**
 * Settles every entry against `table` at `now` (validated first, so nothing is half applied): a
 * key the table does not hold live, a state of another algorithm and a reservation whose window
 * is over are left alone. A refund keeps the key's expiry; a charge keeps it `ceil(keepMs) + 1`
 * ms from now (as lua/settle.lua sets its TTL). One flag per entry: true where settled.
 */
export function settleInTable(
  table: StateTable,
  entries: readonly StoreSettleEntry[],
  now: number,
): boolean[] {
  assertValidSettleEntries(entries);
  const settled: boolean[] = new Array(entries.length);
  for (let i = 0; i < entries.length; i++) {
    const { key, policy, reservedUnits, actualUnits, reservedAgoMs, answeredAgoMs, waitMs } = entries[
      i
    ] as StoreSettleEntry;
    settled[i] = false;
    const deltaUnits = actualUnits - reservedUnits;
    if (deltaUnits === 0) continue;
    const state = table.read(key, policy.algorithm, now);
    if (state === undefined) continue;
    const next = ALGORITHMS[policy.algorithm].settle(state, now, {
      limit: policy.limit,
      windowMs: policy.windowMs,
      intervalMs: policy.intervalMs,
      deltaUnits,
      reservedAtMs: now - reservedAgoMs,
      reservedByMs: now - (answeredAgoMs ?? reservedAgoMs),
      reservedUnits,
      waitMs,
    });
    if (next === undefined) continue;
    let expiresAtMs = table.expiresAt(key) as number;
    if (deltaUnits > 0) expiresAtMs = now + Math.min(Math.ceil(next.keepMs) + 1, MAX_TTL_MS);
    table.write(key, policy.algorithm, next.state, expiresAtMs, now);
    settled[i] = true;
  }
  return settled;
}
