import type { StoreEntry } from '../types.js';
import { LOG_CUM_MAX } from './sliding-log.js';

const ALGORITHM_NAMES: ReadonlySet<string> = new Set([
  'token-bucket',
  'gcra',
  'sliding-window',
  'fixed-window',
  'sliding-log',
]);

function assertPositive(field: string, value: unknown, policy: string): void {
  if (typeof value !== 'number' || !(value > 0) || value === Number.POSITIVE_INFINITY) {
    throw new Error(
      `store: "${field}" must be a positive finite number, got ${String(value)} (policy "${policy}")`,
    );
  }
}

/**
 * Throws unless `entries` can be decided by a store: distinct keys, positive finite
 * limit / windowMs / intervalMs / cost, a known algorithm, and a whole cost for
 * sliding-log (whose limit is at most LOG_CUM_MAX). Allocation-free: it runs on every check.
 */
export function assertValidEntries(entries: readonly StoreEntry[]): void {
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i] as StoreEntry;
    const { policy, cost } = entry;
    for (let j = 0; j < i; j++) {
      if ((entries[j] as StoreEntry).key === entry.key) {
        throw new Error(`store: duplicate key in one check (policy "${policy.name}")`);
      }
    }
    assertPositive('limit', policy.limit, policy.name);
    assertPositive('windowMs', policy.windowMs, policy.name);
    assertPositive('intervalMs', policy.intervalMs, policy.name);
    assertPositive('cost', cost, policy.name);
    if (!ALGORITHM_NAMES.has(policy.algorithm)) {
      throw new Error(
        `store: unknown algorithm ${JSON.stringify(policy.algorithm)} (policy "${policy.name}")`,
      );
    }
    if (policy.algorithm === 'sliding-log' && !Number.isInteger(cost)) {
      throw new Error(
        `store: sliding-log "cost" must be a whole number, got ${cost} (policy "${policy.name}")`,
      );
    }
    if (policy.algorithm === 'sliding-log' && policy.limit > LOG_CUM_MAX) {
      throw new Error(
        `store: sliding-log "limit" must be at most ${LOG_CUM_MAX}, got ${policy.limit} (policy "${policy.name}")`,
      );
    }
  }
}
