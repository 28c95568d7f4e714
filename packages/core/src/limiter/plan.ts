/**
 * Planning a check, one step: the descriptor validated, then the applying policies with their
 * keys and costs (which policies apply to a request and what each one charges), and the overload
 * fields of the planned entries (a slot id per concurrency entry, a wait per waiting entry).
 */

import { holdsSlots } from '../algorithms/concurrency.js';
import { ALGORITHMS } from '../algorithms/registry.js';
import { identityProblem, identityTag, isIdentityInput, policyKey, requestKey } from '../keys/build-keys.js';
import { costProblem, isCompiledPolicy } from '../policy/define-policy.js';
import { describeValue } from '../policy/errors.js';
import { MAX_WAIT_MS_MOST, MAX_WAIT_MS_RULE } from '../policy/max-wait.js';
import type { CompiledPolicy, Descriptor, StoreCheckOptions, StoreEntry } from '../types.js';

/** The policies a limiter can apply, and where their keys live. */
export interface PolicySet {
  /** In the order given. */
  readonly policies: readonly CompiledPolicy[];
  readonly byName: ReadonlyMap<string, CompiledPolicy>;
  readonly prefix: string;
  /** Some policy takes a concurrency slot or may wait (`usesOverload`). */
  readonly overload: boolean;
}

/** A planned check: one store entry per applying policy, and the store call's options. */
export interface CheckPlan {
  readonly entries: readonly StoreEntry[];
  /** The request record of an idempotent check (`descriptor.requestId`); undefined otherwise. */
  readonly options: StoreCheckOptions | undefined;
  /**
   * Some entry may wait for its turn (`maxWaitMs`): the check goes to the store, past the in-process
   * steps, and is counted among the `maxWaiting` (`OverloadPlanner.planWait`) until it ends.
   */
  readonly waits: boolean;
}

/** The compiled policy called `name`; throws a TypeError naming the known policies otherwise. */
export function policyNamed(set: PolicySet, name: string): CompiledPolicy {
  const found = set.byName.get(name);
  if (found === undefined) {
    throw new TypeError(
      `limiter: unknown policy ${describeValue(name)} (known: ${[...set.byName.keys()].join(', ')})`,
    );
  }
  return found;
}

/** Throws a TypeError naming the field when `descriptor` is not one `method` can take. */
function validateDescriptor(set: PolicySet, descriptor: Descriptor, method: 'check' | 'peek'): void {
  if (typeof descriptor !== 'object' || descriptor === null) {
    throw new TypeError(
      `limiter.${method}: the descriptor must be an object, got ${describeValue(descriptor)}`,
    );
  }
  if (!isIdentityInput(descriptor.identity)) {
    throw new TypeError(identityProblem(`limiter.${method}: "identity"`, descriptor.identity));
  }
  if (descriptor.route !== undefined && typeof descriptor.route !== 'string') {
    throw new TypeError(
      `limiter.${method}: "route" must be a string, got ${describeValue(descriptor.route)}`,
    );
  }
  checkCostRecord(descriptor.cost, set.byName, method);
  const { requestId } = descriptor;
  if (method === 'check' && requestId !== undefined && (typeof requestId !== 'string' || requestId === '')) {
    throw new TypeError(
      `limiter.check: "requestId" must be a non-empty string, got ${describeValue(requestId)}`,
    );
  }
  checkOverloadFields(descriptor, method);
  const { reserve } = descriptor;
  if (reserve !== undefined && typeof reserve !== 'boolean') {
    throw new TypeError(`limiter.${method}: "reserve" must be a boolean, got ${describeValue(reserve)}`);
  }
}

/**
 * Plans one check or peek of `descriptor`: validates it, picks the applying policies, builds each
 * one's key and cost, and (for an idempotent check) the request record kept for `recordTtlMs`.
 *
 * @throws TypeError for a programmer error: bad descriptor, unknown policy, bad cost or request id
 */
export function planCheck(
  set: PolicySet,
  descriptor: Descriptor,
  method: 'check' | 'peek',
  recordTtlMs: number,
  overload?: OverloadPlanner,
): CheckPlan {
  validateDescriptor(set, descriptor, method);
  const applying = selectPolicies(set.policies, set.byName, descriptor.policies, method);
  const tag = identityTag(set.prefix, descriptor.identity);
  const { route } = descriptor;
  // Concurrency and waiting: only for a check of a limiter that has such policies, or asked to wait.
  const planner =
    method === 'check' && (set.overload || descriptor.maxWaitMs !== undefined) ? overload : undefined;
  const entries: StoreEntry[] = applying.map((p) =>
    planner === undefined
      ? { key: policyKey(tag, p, route), policy: p, cost: resolveCost(p, descriptor, method) }
      : overloadEntry(policyKey(tag, p, route), p, resolveCost(p, descriptor, method), descriptor, planner),
  );
  const waits = planner !== undefined && entries.some((e) => e.maxWaitMs !== undefined);
  // Counted among the `maxWaiting` from now: the check ends it once it is answered or has waited.
  if (waits) planner.planWait();
  if (method === 'peek' || descriptor.requestId === undefined) return { entries, options: undefined, waits };
  const options: StoreCheckOptions = {
    requestKey: requestKey(
      tag,
      descriptor.requestId,
      entries.map((e) => e.key),
    ),
    requestTtlMs: recordTtlMs,
  };
  return { entries, options, waits };
}

/** One entry of `limiter.checkEntries`: a storage key, the compiled policy deciding it, its cost. */
export type ExplicitEntry = Pick<StoreEntry, 'key' | 'policy' | 'cost'>;

/** Why `policy` cannot be decided as an explicit entry (it needs an in-process step); undefined when it can. */
function explicitPolicyProblem(policy: CompiledPolicy): string | undefined {
  if (holdsSlots(policy)) return 'holds concurrency slots (released per decision)';
  if (policy.lease !== undefined) return 'takes leases';
  if (policy.local !== undefined) return 'has a local stage';
  return undefined;
}

/**
 * The store entries of `limiter.checkEntries`, validated: a non-empty string key, a policy compiled
 * by `definePolicy` that needs no in-process step (no concurrency, lease or local stage), and a
 * positive finite cost (whole for window algorithms). A cost above the policy's limit is no error
 * here: the store denies it, since the caller's costs come from requests.
 *
 * @throws TypeError naming the entry and the field
 */
export function planEntries(entries: readonly ExplicitEntry[], method: string): StoreEntry[] {
  if (!Array.isArray(entries)) {
    throw new TypeError(
      `limiter.${method}: the entries must be an array of { key, policy, cost }, got ${describeValue(entries)}`,
    );
  }
  return entries.map((entry, i) => {
    const where = `limiter.${method}: entries[${i}]`;
    if (typeof entry !== 'object' || entry === null) {
      throw new TypeError(`${where} must be an object { key, policy, cost }, got ${describeValue(entry)}`);
    }
    const { key, policy, cost } = entry;
    if (typeof key !== 'string' || key === '') {
      throw new TypeError(`${where}.key must be a non-empty string, got ${describeValue(key)}`);
    }
    if (!isCompiledPolicy(policy)) {
      throw new TypeError(
        `${where}.policy must be a policy compiled by definePolicy, got ${describeValue(policy)}`,
      );
    }
    const unfit = explicitPolicyProblem(policy);
    if (unfit !== undefined)
      throw new TypeError(`${where}.policy "${policy.name}" ${unfit}: check it with limiter.check`);
    const problem = costProblem(cost, policy.algorithm, Number.POSITIVE_INFINITY);
    if (problem !== undefined) throw new TypeError(`${where}.cost ${problem}, got ${describeValue(cost)}`);
    return { key, policy, cost };
  });
}

/**
 * The policies of `all` that apply to `descriptor`, in limiter order: all when `names` is unset.
 *
 * @throws TypeError for an explicit empty list (nothing would be limited), a name the limiter
 *   does not know, or a value that is not an array
 */
export function selectPolicies(
  all: readonly CompiledPolicy[],
  byName: ReadonlyMap<string, CompiledPolicy>,
  names: readonly string[] | undefined,
  method: string,
): readonly CompiledPolicy[] {
  if (names === undefined) return all;
  if (!Array.isArray(names)) {
    throw new TypeError(
      `limiter.${method}: "policies" must be an array of policy names, got ${describeValue(names)}`,
    );
  }
  if (names.length === 0) {
    // An explicit empty list would admit every request unlimited: almost surely a bug upstream.
    throw new TypeError(
      `limiter.${method}: "policies" must name at least one policy of the limiter (${[...byName.keys()].join(', ')}), ` +
        'got an empty array (leave it unset for all of them)',
    );
  }
  for (const name of names) {
    if (typeof name !== 'string' || !byName.has(name)) {
      throw new TypeError(
        `limiter.${method}: unknown policy ${describeValue(name)} in "policies" (known: ${[...byName.keys()].join(', ')})`,
      );
    }
  }
  return all.filter((p) => names.includes(p.name));
}

/**
 * The cost `policy` charges for `descriptor`: the descriptor's number, or its record's entry for
 * this policy, else the policy's own cost (a number or a function of the descriptor).
 *
 * @throws TypeError when the cost is not a positive finite number, is fractional for a window
 *   algorithm, or exceeds what the policy could ever admit: a programmer error, not a limit.
 */
export function resolveCost(policy: CompiledPolicy, descriptor: Descriptor, method: string): number {
  // A concurrency policy counts requests in flight: one slot each, whatever the cost.
  if (holdsSlots(policy)) return 1;
  const given = descriptor.cost;
  let cost: unknown;
  let from: string;
  if (typeof given === 'number') {
    cost = given;
    from = 'descriptor.cost';
  } else if (given !== undefined && Object.hasOwn(given, policy.name) && given[policy.name] !== undefined) {
    // Own entries only: a policy named `constructor` is not Object.prototype's member.
    cost = given[policy.name];
    from = `descriptor.cost.${policy.name}`;
  } else if (typeof policy.cost === 'function') {
    cost = policy.cost(descriptor);
    from = "the policy's cost function";
  } else {
    // A policy's own number was validated by definePolicy.
    return policy.cost as number;
  }
  const problem = costProblem(cost, policy.algorithm, policy.limit);
  if (problem !== undefined) {
    throw new TypeError(
      `limiter.${method}: cost for policy "${policy.name}" (${from}) ${problem}, got ${describeValue(cost)}`,
    );
  }
  return cost as number;
}

/** Checks that a descriptor's cost record names only policies of this limiter. */
export function checkCostRecord(
  cost: Descriptor['cost'],
  byName: ReadonlyMap<string, CompiledPolicy>,
  method: string,
): void {
  if (cost === undefined || typeof cost === 'number') return;
  if (typeof cost !== 'object' || cost === null || Array.isArray(cost)) {
    throw new TypeError(
      `limiter.${method}: "cost" must be a number or a record of policy name to number, got ${describeValue(cost)}`,
    );
  }
  for (const name of Object.keys(cost)) {
    if (!byName.has(name)) {
      throw new TypeError(
        `limiter.${method}: "cost" names unknown policy ${JSON.stringify(name)} (known: ${[...byName.keys()].join(', ')})`,
      );
    }
  }
}

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
