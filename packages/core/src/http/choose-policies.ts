/**
 * The three per-request forms of the adapter options, each as a `PolicyChooser`: `policies` as a
 * function naming a shared limiter's policies, `limit` as a function with the `window` shorthand,
 * and `policies` as a function answering policy inputs (compiled once per value).
 */
import { createLimiter, type Limiter } from '../limiter/index.js';
import { OPTION_DEFAULTS } from '../options/defaults.js';
import type { CompiledPolicy, FailMode, PolicyInput, Store } from '../types.js';
import type { Reporter } from '../warn.js';
import {
  badValueProblem,
  type ChoiceAnswer,
  CompiledCache,
  callChooser,
  choiceFailed,
  type PolicyChoice,
  type PolicyChooser,
  policySetKey,
  thrownProblem,
  unchosenFailMode,
} from './policy-choice.js';

/** The names of a limiter's policies, per policy array (a new array after `updatePolicies`). */
const namesOf = new WeakMap<readonly CompiledPolicy[], ReadonlySet<string>>();

function knownNames(limiter: Limiter): ReadonlySet<string> {
  const { policies } = limiter;
  let names = namesOf.get(policies);
  if (names === undefined) {
    names = new Set(policies.map((p) => p.name));
    namesOf.set(policies, names);
  }
  return names;
}

/**
 * `policies` as a function with a shared `limiter`: it answers names of the limiter's policies
 * (sync or async). A throw, a rejection, an empty or non-array answer or an unknown name makes
 * the request `unavailable`, open only when every policy of the limiter fails open.
 */
export function chooseNamedPolicies<Req>(
  limiter: Limiter,
  fn: (req: Req) => unknown,
  adapter: Reporter,
): PolicyChooser<Req> {
  const failMode = (): FailMode => unchosenFailMode(limiter.policies);
  const accept = (names: unknown): ChoiceAnswer => {
    if (!Array.isArray(names) || names.length === 0) {
      return choiceFailed(
        adapter,
        'policies',
        badValueProblem(names, 'is not a non-empty array of policy names'),
        failMode(),
      );
    }
    const known = knownNames(limiter);
    for (const name of names) {
      if (typeof name !== 'string' || !known.has(name)) {
        return choiceFailed(
          adapter,
          'policies',
          badValueProblem(name, `is not a policy of the limiter (${[...known].join(', ')})`),
          failMode(),
        );
      }
    }
    return { limiter, policyNames: names as string[], policySet: policySetKey(names as string[]) };
  };
  const rejected = (error: unknown) => choiceFailed(adapter, 'policies', thrownProblem(error), failMode());
  return (req) => callChooser(fn, req, accept, rejected);
}

/** What a limiter built per compiled value shares with the others of its middleware. */
export interface CompileTarget {
  readonly store: Store;
  readonly prefix: string | undefined;
  /** Applied to every compiled policy input (the `failMode` and `shadow` options). */
  readonly prepare: (input: PolicyInput) => PolicyInput;
  /** The fail mode of a request whose value could not be compiled. */
  readonly failMode: FailMode;
  /**
   * Builds the limiter of the prepared policies (default: `createLimiter` with `store` and
   * `prefix`); a surface with more limiter options (the Nest module) passes its own.
   */
  readonly create?: ((policies: readonly PolicyInput[]) => Limiter) | undefined;
}

function limiterOf(target: CompileTarget, inputs: readonly PolicyInput[]): Limiter {
  if (target.create !== undefined) return target.create(inputs.map(target.prepare));
  return createLimiter({
    policies: inputs.map(target.prepare),
    store: target.store,
    ...(target.prefix !== undefined && { prefix: target.prefix }),
  });
}

/**
 * `limit` as a function with the `window` shorthand: each limit it answers (a positive integer)
 * is compiled once into a limiter of one policy named `default`, kept in `cache`; every such
 * limiter uses the one store, so a client's state carries over when its limit changes.
 */
export function chooseLimit<Req>(
  fn: (req: Req) => unknown,
  policyOf: (limit: number) => PolicyInput,
  target: CompileTarget,
  adapter: Reporter,
  cache: CompiledCache<Limiter> = new CompiledCache(),
): PolicyChooser<Req> {
  const choices = new WeakMap<Limiter, PolicyChoice>();
  const accept = (limit: unknown): ChoiceAnswer => {
    if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit <= 0) {
      return choiceFailed(
        adapter,
        'limit',
        badValueProblem(limit, 'is not a positive integer'),
        target.failMode,
      );
    }
    const limiter = cache.get(limit, () => limiterOf(target, [policyOf(limit)]));
    // One choice object per limiter, not one per request.
    let choice = choices.get(limiter);
    if (choice === undefined) {
      choice = { limiter, policyNames: undefined, policySet: '*' };
      choices.set(limiter, choice);
    }
    return choice;
  };
  const rejected = (error: unknown) => choiceFailed(adapter, 'limit', thrownProblem(error), target.failMode);
  return (req) => callChooser(fn, req, accept, rejected);
}

/** A number per function seen in policy inputs, so a key can name a function by its identity. */
const functionIds = new WeakMap<object, number>();
let nextFunctionId = 0;

function functionId(fn: object): number {
  let id = functionIds.get(fn);
  if (id === undefined) {
    id = nextFunctionId++;
    functionIds.set(fn, id);
  }
  return id;
}

/** Puts a function in a key as its identity (JSON drops functions, which would merge two lists). */
function keyValue(_field: string, value: unknown): unknown {
  return typeof value === 'function' ? { function: functionId(value) } : value;
}

/**
 * A key for a list of policy inputs: equal lists get equal keys, where a field holding a function
 * is equal only when it holds the same function (two lists differing by `cost: () => 5` and
 * `cost: () => 1` are two limiters; a function made anew per request is a new list each time).
 */
export function inputsKey(inputs: readonly unknown[]): string {
  return JSON.stringify(inputs, keyValue);
}

/**
 * `policies` as a function without a shared limiter: it answers policy inputs, compiled once per
 * list into a limiter on the one store (a list the function answers again, the same array or an
 * equal one with the same functions in it, is not compiled again; see `inputsKey`). A throw, a rejection, a bad list or a bad policy (the
 * `PolicyError` of `createLimiter`) makes the request `unavailable` under the `failMode` option.
 */
export function choosePolicyInputs<Req>(
  fn: (req: Req) => unknown,
  target: CompileTarget,
  adapter: Reporter,
  cache: CompiledCache<Limiter> = new CompiledCache(),
): PolicyChooser<Req> {
  const byArray = new WeakMap<object, PolicyChoice>();
  const accept = (inputs: unknown): ChoiceAnswer => {
    if (!Array.isArray(inputs) || inputs.length === 0) {
      return choiceFailed(
        adapter,
        'policies',
        badValueProblem(inputs, 'is not a non-empty array of policies'),
        target.failMode,
      );
    }
    const same = byArray.get(inputs);
    if (same !== undefined) return same;
    let limiter: Limiter;
    try {
      limiter = cache.get(inputsKey(inputs), () => limiterOf(target, inputs as PolicyInput[]));
    } catch (error) {
      return choiceFailed(adapter, 'policies', `answered a bad policy: ${String(error)}`, target.failMode);
    }
    const choice: PolicyChoice = { limiter, policyNames: undefined, policySet: '*' };
    byArray.set(inputs, choice);
    return choice;
  };
  const rejected = (error: unknown) =>
    choiceFailed(adapter, 'policies', thrownProblem(error), target.failMode);
  return (req) => callChooser(fn, req, accept, rejected);
}

/** The fail mode of the policies a middleware builds itself: the `failMode` option, or the default. */
export function ownFailMode(failMode: FailMode | undefined): FailMode {
  return unchosenFailMode([{ failMode: failMode ?? OPTION_DEFAULTS.failMode }]);
}
