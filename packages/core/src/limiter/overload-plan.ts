/** The overload fields of a planned check: a slot id per concurrency entry, a wait per waiting entry. */

import { holdsSlots } from '../algorithms/concurrency.js';
import { ALGORITHMS } from '../algorithms/registry.js';
import { describeValue } from '../policy/errors.js';
import { MAX_WAIT_MS_MOST, MAX_WAIT_MS_RULE } from '../policy/max-wait.js';
import type { CompiledPolicy, Descriptor, StoreEntry } from '../types.js';

/** What planning needs of the limiter's overload parts. */
export interface OverloadPlanner {
  /** A new slot id, unique across instances. */
  nextSlotId(): string;
  /** Whether another check may wait now (`maxWaiting` not reached, planned waits counted). */
  readonly waitsOpen: boolean;
  /** Counts a check whose wait is planned among the `maxWaiting`, from now until `Turns.end`. */
  planWait(): void;
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

/**
 * Whether `value` is an AbortSignal as a wait uses it: `aborted`, and a listener added and removed.
 * (An `AbortController`, `{}` or an object without `removeEventListener` is not.)
 */
function isAbortSignal(value: unknown): value is AbortSignal {
  if (typeof value !== 'object' || value === null) return false;
  const signal = value as Partial<AbortSignal>;
  return (
    typeof signal.aborted === 'boolean' &&
    typeof signal.addEventListener === 'function' &&
    typeof signal.removeEventListener === 'function'
  );
}

/**
 * Throws a TypeError naming the field when the descriptor's `maxWaitMs` or `signal` is not one a
 * check takes: `maxWaitMs` a number of ms from 0 to one hour (as a policy's), `signal` an
 * AbortSignal or a function (what it returns is checked when it is called, by `waitSignalOf`).
 */
export function checkOverloadFields(descriptor: Descriptor, method: 'check' | 'peek'): void {
  const { maxWaitMs, signal } = descriptor;
  if (maxWaitMs !== undefined) {
    if (!(typeof maxWaitMs === 'number' && maxWaitMs >= 0 && Number.isFinite(maxWaitMs))) {
      throw new TypeError(
        `limiter.${method}: descriptor.maxWaitMs must be a finite number of ms >= 0, got ${describeValue(maxWaitMs)}`,
      );
    }
    if (maxWaitMs > MAX_WAIT_MS_MOST) {
      throw new TypeError(
        `limiter.${method}: descriptor.maxWaitMs ${MAX_WAIT_MS_RULE}, got ${describeValue(maxWaitMs)}`,
      );
    }
  }
  if (signal !== undefined && typeof signal !== 'function' && !isAbortSignal(signal)) {
    throw new TypeError(
      `limiter.${method}: descriptor.signal must be an AbortSignal or a function returning one, got ${describeValue(signal)}`,
    );
  }
}

/**
 * The signal that cancels a check's wait: `descriptor.signal`, or what its function returns (called
 * here, once the check is to sleep: a check answered at once makes none).
 *
 * @throws TypeError naming `descriptor.signal` when the function throws (the error is its `cause`)
 *   or returns something that is not an AbortSignal
 */
export function waitSignalOf(descriptor: Descriptor): AbortSignal | undefined {
  const { signal } = descriptor;
  if (typeof signal !== 'function') return signal;
  let made: unknown;
  try {
    made = signal();
  } catch (error) {
    throw new TypeError(
      'limiter.check: descriptor.signal() threw (the error is the cause); it must return an AbortSignal',
      {
        cause: error,
      },
    );
  }
  if (!isAbortSignal(made)) {
    throw new TypeError(
      `limiter.check: descriptor.signal() must return an AbortSignal, got ${describeValue(made)}`,
    );
  }
  return made;
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
