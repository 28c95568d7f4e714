/** Resolving which policies apply to a request and what each one charges. */

import { holdsSlots } from '../algorithms/concurrency.js';
import { costProblem } from '../policy/define-policy.js';
import { describeValue } from '../policy/errors.js';
import type { CompiledPolicy, Descriptor } from '../types.js';

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
