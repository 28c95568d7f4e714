/** The checks every store runs on the entries of a check, from the algorithm registry's store rules. */
import type { CompiledPolicy, SlotRef, StoreEntry, StoreMode, StoreSettleEntry } from '../types.js';
import { holdsSlots } from './concurrency.js';
import { ALGORITHMS, isAlgorithm, WAITING_ALGORITHMS } from './registry.js';

/** Longest `slotId` a store takes (characters). */
export const MAX_SLOT_ID_LENGTH = 128;

/**
 * Throws unless a concurrency entry can be decided: cost 1 (one slot), no lease take, and in mode
 * 'consume' a `slotId` (a string of 1 to `MAX_SLOT_ID_LENGTH` characters) for the slot it takes.
 */
function assertSlotEntry(entry: StoreEntry, mode: StoreMode | undefined): void {
  const { policy, cost, slotId } = entry;
  if (cost !== 1 || entry.leastCost !== undefined) {
    throw new Error(`store: a concurrency entry costs 1 slot, got cost ${cost} (policy "${policy.name}")`);
  }
  if (
    slotId === undefined
      ? mode === 'consume'
      : typeof slotId !== 'string' || slotId.length === 0 || slotId.length > MAX_SLOT_ID_LENGTH
  ) {
    throw new Error(
      `store: a concurrency entry in mode 'consume' needs a "slotId" of 1 to ${MAX_SLOT_ID_LENGTH} characters, got ${typeof slotId === 'string' ? `${slotId.length} characters` : String(slotId)} (policy "${policy.name}")`,
    );
  }
}

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
 * (0, cost], a concurrency entry's cost 1 and `slotId` (required in mode 'consume'), and a
 * `maxWaitMs` (waiting) of 0 or more, > 0 only on an algorithm that waits and not with a lease
 * take. Allocation-free: it runs on every check; a frozen policy's own fields are checked once.
 */
export function assertValidEntries(entries: readonly StoreEntry[], mode?: StoreMode): void {
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
    if (holdsSlots(policy)) assertSlotEntry(entry, mode);
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

/**
 * Throws unless `slots` can be released or renewed: each a concurrency policy's key (a non-empty
 * string) and a `slotId` as a check takes it.
 */
export function assertValidSlots(slots: readonly SlotRef[]): void {
  for (const slot of slots) {
    const { key, policy } = slot;
    if (
      typeof key !== 'string' ||
      key === '' ||
      typeof policy !== 'object' ||
      policy === null ||
      !holdsSlots(policy)
    ) {
      throw new Error(
        `store: a slot needs the key of a concurrency policy, got ${typeof key === 'string' ? 'a key' : String(key)} of policy "${String(policy?.name)}" (${String(policy?.algorithm)})`,
      );
    }
    assertSlotEntry({ key, policy, cost: 1, slotId: slot.slotId }, 'consume');
    if (!(policy.windowMs > 0 && policy.windowMs < 1e13)) {
      throw new Error(
        `store: "windowMs" (the slot lease) must be a positive number of ms, got ${policy.windowMs} (policy "${policy.name}")`,
      );
    }
  }
}
