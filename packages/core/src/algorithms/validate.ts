import type { StoreEntry } from '../types.js';

/**
 * Throws unless `entries` can be decided by a store: distinct keys, positive finite
 * limit / windowMs / intervalMs / cost, and a whole cost for sliding-log.
 */
export function assertValidEntries(entries: readonly StoreEntry[]): void {
  const seen = new Set<string>();
  for (const entry of entries) {
    const { policy, cost } = entry;
    if (seen.has(entry.key)) throw new Error(`store: duplicate key in one check (policy "${policy.name}")`);
    seen.add(entry.key);
    const numbers = [
      ['limit', policy.limit],
      ['windowMs', policy.windowMs],
      ['intervalMs', policy.intervalMs],
      ['cost', cost],
    ] as const;
    for (const [field, value] of numbers) {
      if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
        throw new Error(
          `store: "${field}" must be a positive finite number, got ${String(value)} (policy "${policy.name}")`,
        );
      }
    }
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
  }
}

const ALGORITHM_NAMES: ReadonlySet<string> = new Set([
  'token-bucket',
  'gcra',
  'sliding-window',
  'fixed-window',
  'sliding-log',
]);
