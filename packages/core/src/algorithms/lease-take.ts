/** A lease take in TypeScript: as much as is left, down to the least a request needs (lua/decide.lua's twin). */
import { ALGORITHMS } from './registry.js';
import type { AlgorithmParams, Evaluation } from './types.js';

/** A lease take's evaluation and the units it would charge. */
export interface LeaseTake {
  readonly evaluation: Evaluation<unknown>;
  readonly units: number;
}

/**
 * The take of an entry whose full cost was denied (`denied`): the whole units left now when they
 * are at least `leastCost`, else `leastCost` itself (so a denial tells when the least could pass);
 * when what is left still does not pass (rounding at the edge), `leastCost`. The same steps as
 * the lease take in lua/decide.lua.
 */
export function leaseTake(
  algorithm: keyof typeof ALGORITHMS,
  state: unknown,
  nowMs: number,
  params: AlgorithmParams,
  denied: Evaluation<unknown>,
  leastCost: number,
): LeaseTake {
  const evaluate = ALGORITHMS[algorithm].evaluate as (
    s: unknown,
    n: number,
    p: AlgorithmParams,
  ) => Evaluation<unknown>;
  const left = denied.remaining;
  let units = Math.max(left, leastCost);
  let evaluation = evaluate(state, nowMs, { ...params, cost: units });
  if (!evaluation.allowed && units > leastCost) {
    units = leastCost;
    evaluation = evaluate(state, nowMs, { ...params, cost: units });
  }
  return { evaluation, units };
}
