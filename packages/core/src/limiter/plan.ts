/** Planning a check: the descriptor validated, then the applying policies with their keys and costs. */
import { holdsSlots } from '../algorithms/concurrency.js';
import { identityTag, policyKey, requestKey } from '../keys/build-keys.js';
import { identityProblem, isIdentityInput } from '../keys/identity.js';
import { costProblem, isCompiledPolicy } from '../policy/define-policy.js';
import { describeValue } from '../policy/errors.js';
import type { CompiledPolicy, Descriptor, StoreCheckOptions, StoreEntry } from '../types.js';
import { checkCostRecord, resolveCost, selectPolicies } from './costs.js';
import { checkOverloadFields, type OverloadPlanner, overloadEntry } from './overload-plan.js';

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
