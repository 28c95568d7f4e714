/** The overload fields of a planned check: a slot id per concurrency entry, a wait per waiting entry. */

import { holdsSlots } from '../algorithms/concurrency.js';
import { ALGORITHMS } from '../algorithms/registry.js';
import { describeValue } from '../policy/errors.js';
import type { CompiledPolicy, Descriptor, StoreEntry } from '../types.js';

/** What planning needs of the limiter's overload parts. */
export interface OverloadPlanner {
  /** A new slot id, unique across instances. */
  nextSlotId(): string;
  /** Whether another check may wait now (`maxWaiting` not reached). */
  readonly waitsOpen: boolean;
}

/**
 * Whether a check may wait for `policy`: its algorithm reserves a future turn (its module has
 * `reserve`: `WAITING_ALGORITHMS`), and it is enforced and decided in the store alone (a shadow
 * policy never holds a request back; a lease or local stage answers in-process).
 */
function canWait(policy: CompiledPolicy): boolean {
  return (
    ALGORITHMS[policy.algorithm].reserve !== undefined &&
    !policy.shadow &&
    policy.lease === undefined &&
    policy.local === undefined
  );
}

/** True when some policy takes a slot or may wait: its checks' entries are planned by `overloadEntry`. */
export function usesOverload(policies: readonly CompiledPolicy[]): boolean {
  return policies.some((p) => holdsSlots(p) || p.maxWaitMs !== undefined);
}

/** Throws a TypeError naming the field when the descriptor's `maxWaitMs` or `signal` is not one a check takes. */
export function checkOverloadFields(descriptor: Descriptor, method: 'check' | 'peek'): void {
  const { maxWaitMs, signal } = descriptor;
  if (
    maxWaitMs !== undefined &&
    !(typeof maxWaitMs === 'number' && maxWaitMs >= 0 && Number.isFinite(maxWaitMs))
  ) {
    throw new TypeError(
      `limiter.${method}: "maxWaitMs" must be a finite number of ms >= 0, got ${describeValue(maxWaitMs)}`,
    );
  }
  if (
    signal !== undefined &&
    typeof signal !== 'function' &&
    (typeof signal !== 'object' ||
      signal === null ||
      typeof signal.aborted !== 'boolean' ||
      typeof signal.addEventListener !== 'function')
  ) {
    throw new TypeError(
      `limiter.${method}: "signal" must be an AbortSignal or a function returning one, got ${describeValue(signal)}`,
    );
  }
}

/**
 * The entry of `policy` in a check, with its overload field: a concurrency entry gets a new slot
 * id; an entry that can wait gets its `maxWaitMs` (the descriptor's, else its policy's; none while
 * `maxWaiting` checks wait already). Made in one literal, not copied from a plain entry.
 */
export function overloadEntry(
  key: string,
  policy: CompiledPolicy,
  cost: number,
  descriptor: Descriptor,
  planner: OverloadPlanner,
): StoreEntry {
  if (holdsSlots(policy)) return { key, policy, cost, slotId: planner.nextSlotId() };
  const maxWaitMs =
    canWait(policy) && planner.waitsOpen ? (descriptor.maxWaitMs ?? policy.maxWaitMs ?? 0) : 0;
  return maxWaitMs > 0 ? { key, policy, cost, maxWaitMs } : { key, policy, cost };
}
