/** The checks every store runs on the entries of a check, from the algorithm registry's store rules. */
import type { CompiledPolicy, StoreEntry, StoreSettleEntry } from '../types.js';
import { ALGORITHMS, isAlgorithm, WAITING_ALGORITHMS } from './registry.js';

function assertPositive(field: string, value: unknown, policy: string): void {
  if (typeof value !== 'number' || !(value > 0) || value === Number.POSITIVE_INFINITY) {
    throw new Error(
      `store: "${field}" must be a positive finite number, got ${String(value)} (policy "${policy}")`,
    );
  }
}

/** Throws unless `value` is unset or a finite number of ms >= 0 (`field` of an entry of `policy`). */
function assertOptionalMs(field: string, value: unknown, policy: string): void {
  if (value === undefined) return;
  if (typeof value !== 'number' || !(value >= 0) || value === Number.POSITIVE_INFINITY) {
    throw new Error(
      `store: "${field}" must be a finite number of ms >= 0, got ${String(value)} (policy "${policy}")`,
    );
  }
}

/** Throws unless an entry's `maxWaitMs` (set) is 0, or > 0 on an algorithm that waits and no lease take. */
function assertMaxWait({ policy, maxWaitMs, leastCost }: StoreEntry): void {
  assertOptionalMs('maxWaitMs', maxWaitMs, policy.name);
  if (maxWaitMs === 0) return;
  if (ALGORITHMS[policy.algorithm].reserve === undefined) {
    throw new Error(
      `store: "maxWaitMs" works with ${WAITING_ALGORITHMS.join(' and ')} (they reserve a turn), got ${maxWaitMs} for ${policy.algorithm} (policy "${policy.name}")`,
    );
  }
  if (leastCost !== undefined) {
    throw new Error(`store: "maxWaitMs" cannot go with "leastCost" (a lease take) (policy "${policy.name}")`);
  }
}

/** True when an entry's `maxWaitMs` asks it to wait for its turn (set and > 0; 0 is no waiting). */
export function waitsForTurn(maxWaitMs: number | undefined): boolean {
  return maxWaitMs !== undefined && maxWaitMs > 0;
}

/** Frozen policies whose own fields (limit, windowMs, intervalMs, algorithm) passed the checks. */
const checkedPolicies = new WeakSet<CompiledPolicy>();

/**
 * Throws unless `entries` can be decided by a store: distinct keys, positive finite
 * limit / windowMs / intervalMs / cost, a registered algorithm, and what its store rules ask
 * (a whole cost and a limit of at most 1e15 for sliding-log), and a lease take's `leastCost` in
 * (0, cost], and a `maxWaitMs` (waiting) of 0 or more, > 0 only on an algorithm that waits and
 * not with a lease take. Allocation-free: it runs on every check; a frozen policy's own fields are checked
 * once.
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
    const known = checkedPolicies.has(policy);
    if (!known) {
      assertPositive('limit', policy.limit, policy.name);
      assertPositive('windowMs', policy.windowMs, policy.name);
      assertPositive('intervalMs', policy.intervalMs, policy.name);
    }
    assertPositive('cost', cost, policy.name);
    const { algorithm } = policy;
    if (!known && !isAlgorithm(algorithm)) {
      throw new Error(`store: unknown algorithm ${JSON.stringify(algorithm)} (policy "${policy.name}")`);
    }
    const rules = ALGORITHMS[algorithm].store;
    if (rules.wholeCosts && !Number.isInteger(cost)) {
      throw new Error(
        `store: ${algorithm} "cost" must be a whole number, got ${cost} (policy "${policy.name}")`,
      );
    }
    const { leastCost } = entry;
    if (leastCost !== undefined) {
      assertPositive('leastCost', leastCost, policy.name);
      if (leastCost > cost || (rules.wholeCosts && !Number.isInteger(leastCost))) {
        throw new Error(
          `store: "leastCost" must be at most the cost${rules.wholeCosts ? ' and whole' : ''}, got ${leastCost} (policy "${policy.name}")`,
        );
      }
    }
    if (entry.maxWaitMs !== undefined) assertMaxWait(entry);
    if (!known) {
      if (rules.maxLimit !== undefined && policy.limit > rules.maxLimit) {
        throw new Error(
          `store: ${algorithm} "limit" must be at most ${rules.maxLimit}, got ${policy.limit} (policy "${policy.name}")`,
        );
      }
      if (Object.isFrozen(policy)) checkedPolicies.add(policy);
    }
  }
}

/**
 * Throws unless `entries` can be settled: as `assertValidEntries` for the keys and policies (the
 * reserved units stand for the cost), a finite `actualUnits` >= 0, `reservedAgoMs` >= 0 and
 * `answeredAgoMs` (when set) from 0 to `reservedAgoMs`, `waitMs` (when set) >= 0 (a whole `actualUnits` where the algorithm
 * takes whole costs).
 */
export function assertValidSettleEntries(entries: readonly StoreSettleEntry[]): void {
  assertValidEntries(entries.map((e) => ({ key: e.key, policy: e.policy, cost: e.reservedUnits })));
  for (const { policy, actualUnits, reservedAgoMs, answeredAgoMs, waitMs } of entries) {
    assertOptionalMs('waitMs', waitMs, policy.name);
    if (typeof actualUnits !== 'number' || !(actualUnits >= 0) || actualUnits === Number.POSITIVE_INFINITY) {
      throw new Error(
        `store: "actualUnits" must be a finite number >= 0, got ${String(actualUnits)} (policy "${policy.name}")`,
      );
    }
    if (ALGORITHMS[policy.algorithm].store.wholeCosts && !Number.isInteger(actualUnits)) {
      throw new Error(
        `store: ${policy.algorithm} "actualUnits" must be a whole number, got ${actualUnits} (policy "${policy.name}")`,
      );
    }
    if (typeof reservedAgoMs !== 'number' || !(reservedAgoMs >= 0) || !(reservedAgoMs < 1e13)) {
      throw new Error(
        `store: "reservedAgoMs" must be a number of ms from 0 to 1e13, got ${String(reservedAgoMs)} (policy "${policy.name}")`,
      );
    }
    if (
      answeredAgoMs !== undefined &&
      (typeof answeredAgoMs !== 'number' || !(answeredAgoMs >= 0 && answeredAgoMs <= reservedAgoMs))
    ) {
      throw new Error(
        `store: "answeredAgoMs" must be a number of ms from 0 to "reservedAgoMs", got ${String(answeredAgoMs)} (policy "${policy.name}")`,
      );
    }
  }
}
