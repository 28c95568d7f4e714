/** Planning a check: the descriptor validated, then the applying policies with their keys and costs. */
import { identityTag, policyKey, requestKey } from '../keys/build-keys.js';
import { identityProblem, isIdentityInput } from '../keys/identity.js';
import { describeValue } from '../policy/errors.js';
import type { CompiledPolicy, Descriptor, StoreCheckOptions, StoreEntry } from '../types.js';
import { checkCostRecord, resolveCost, selectPolicies } from './costs.js';

/** The policies a limiter can apply, and where their keys live. */
export interface PolicySet {
  /** In the order given. */
  readonly policies: readonly CompiledPolicy[];
  readonly byName: ReadonlyMap<string, CompiledPolicy>;
  readonly prefix: string;
}

/** A planned check: one store entry per applying policy, and the store call's options. */
export interface CheckPlan {
  readonly entries: readonly StoreEntry[];
  /** The request record of an idempotent check (`descriptor.requestId`); undefined otherwise. */
  readonly options: StoreCheckOptions | undefined;
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
): CheckPlan {
  validateDescriptor(set, descriptor, method);
  const applying = selectPolicies(set.policies, set.byName, descriptor.policies, method);
  const tag = identityTag(set.prefix, descriptor.identity);
  const entries = applying.map((p) => ({
    key: policyKey(tag, p, descriptor.route),
    policy: p,
    cost: resolveCost(p, descriptor, method),
  }));
  if (method === 'peek' || descriptor.requestId === undefined) return { entries, options: undefined };
  const options: StoreCheckOptions = {
    requestKey: requestKey(
      tag,
      descriptor.requestId,
      entries.map((e) => e.key),
    ),
    requestTtlMs: recordTtlMs,
  };
  return { entries, options };
}
