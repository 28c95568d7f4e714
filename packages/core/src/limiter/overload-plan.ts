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

/** True when some policy takes a slot or may wait: checks of it are planned with `withOverload`. */
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
    (typeof signal !== 'object' ||
      signal === null ||
      typeof signal.aborted !== 'boolean' ||
      typeof signal.addEventListener !== 'function')
  ) {
    throw new TypeError(`limiter.${method}: "signal" must be an AbortSignal, got ${describeValue(signal)}`);
  }
}

/**
 * The entries of a check with their overload fields: a concurrency entry gets its slot id; an entry that can wait gets its `maxWaitMs` (the descriptor's, else its policy's;
 * none while `maxWaiting` checks wait already). Returns whether some entry may wait.
 */
export function withOverload(
  entries: StoreEntry[],
  descriptor: Descriptor,
  planner: OverloadPlanner,
): boolean {
  let waits = false;
  const waitsOpen = planner.waitsOpen;
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i] as StoreEntry;
    const { policy } = entry;
    if (holdsSlots(policy)) {
      entries[i] = { ...entry, slotId: planner.nextSlotId() };
      continue;
    }
    const maxWaitMs = waitsOpen && canWait(policy) ? (descriptor.maxWaitMs ?? policy.maxWaitMs ?? 0) : 0;
    if (maxWaitMs > 0) {
      entries[i] = { ...entry, maxWaitMs };
      waits = true;
    }
  }
  return waits;
}
