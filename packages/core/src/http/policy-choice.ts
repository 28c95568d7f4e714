/**
 * Policies chosen per request: `policies` or `limit` given as functions of the request, their
 * answers checked, compiled once per value into a limiter (bounded cache) and handed to
 * `limitRequest`; a function that throws or answers a bad value becomes an `unavailable` decision.
 */
import type { Limiter } from '../limiter/limiter.js';
import { describeValue } from '../policy/errors.js';
import type { CompiledPolicy, Decision, FailMode, PolicyResult } from '../types.js';
import { type Reporter, report, WARNING_CODES } from '../warn.js';
import { isThenable } from './thenable.js';

/** The policies chosen for one request: which limiter, which of its policies, the set's record key. */
export interface PolicyChoice {
  readonly limiter: Limiter;
  /** The limiter's policies that apply, or undefined for all of them. */
  readonly policyNames: readonly string[] | undefined;
  /** The double-count record key of the set (see `policySetKey`). */
  readonly policySet: string;
}

/**
 * The chooser of a fixed policy list: the same choice for every request (`policyNames` of
 * `limiter`, or undefined for all its policies). A fixed list is a choice that never changes.
 */
export function fixedChoice<Req>(
  limiter: Limiter,
  policyNames: readonly string[] | undefined,
): PolicyChooser<Req> {
  const choice: PolicyChoice = { limiter, policyNames, policySet: policySetKey(policyNames) };
  return () => choice;
}

/** A choice that failed: the request's decision is `decision` (unavailable under the fail mode). */
export class PolicyChoiceFailure {
  constructor(readonly decision: Decision) {}
}

/** What a chooser answers for one request. */
export type ChoiceAnswer = PolicyChoice | PolicyChoiceFailure;

/** Chooses the policies of one request; never throws or rejects (a failure is an answer). */
export type PolicyChooser<Req> = (req: Req) => ChoiceAnswer | Promise<ChoiceAnswer>;

/** Most compiled values a chooser keeps (limits or policy lists); the oldest goes first past it. */
export const MAX_COMPILED_CHOICES = 256;

/** The double-count record key of a policy set: `*` for all the limiter's policies, else the sorted names. */
export function policySetKey(names: readonly string[] | undefined): string {
  return names === undefined ? '*' : [...names].sort().join('\n');
}

/**
 * The fail mode of a request whose policies could not be chosen: `open` only when every policy
 * it could have been given fails open; otherwise `closed` (a `local` policy cannot be decided
 * in-process without knowing which policy it is).
 */
export function unchosenFailMode(candidates: readonly Pick<CompiledPolicy, 'failMode'>[]): FailMode {
  return candidates.length > 0 && candidates.every((p) => p.failMode === 'open') ? 'open' : 'closed';
}

const NO_RESULTS: readonly PolicyResult[] = Object.freeze([]);

/** The decision of a request whose policies could not be chosen, under `failMode`. */
export function unchosenDecision(failMode: FailMode): Decision {
  const open = failMode === 'open';
  return {
    allowed: open,
    outcome: 'unavailable',
    policy: undefined,
    limit: 0,
    remaining: 0,
    resetMs: 0,
    retryAfterMs: 0,
    shadowed: false,
    source: open ? 'fail-open' : 'fail-closed',
    results: NO_RESULTS,
  } as Decision;
}

/**
 * Reports (to the logger, else once per process; code `SLUICE_POLICY_CHOICE_FAILED`) that `option`'s function threw or
 * answered a bad value, and returns the failure under `failMode`. The message names the option,
 * the error's class or the value's type, never the request or its identity.
 */
export function choiceFailed(
  adapter: Reporter,
  option: 'policies' | 'limit',
  problem: string,
  failMode: FailMode,
): PolicyChoiceFailure {
  report(
    adapter.logger,
    'error',
    WARNING_CODES.POLICY_CHOICE_FAILED,
    `${adapter.adapter} rateLimit(): the "${option}" function ${problem}; such requests are unavailable ` +
      `(${failMode === 'open' ? 'admitted: every policy it may choose fails open' : 'answered 503: fail closed'}).`,
    { adapter: adapter.adapter, option, failMode },
  );
  return new PolicyChoiceFailure(unchosenDecision(failMode));
}

/** What a thrown value was, for a message: its class name, never its text (it may hold request data). */
export function thrownProblem(error: unknown): string {
  const name = error instanceof Error ? error.constructor.name : typeof error;
  return `threw (${name})`;
}

/** A bad answer, for a message: its type, or the offending name. */
export function badValueProblem(value: unknown, requirement: string): string {
  return `answered ${describeValue(value)}, which ${requirement}`;
}

/**
 * Calls `fn(req)` and hands its answer (sync or async) to `accept`; a throw or a rejection goes
 * to `rejected`. Never throws.
 */
export function callChooser<Req, V>(
  fn: (req: Req) => V | PromiseLike<V>,
  req: Req,
  accept: (value: V) => ChoiceAnswer,
  rejected: (error: unknown) => ChoiceAnswer,
): ChoiceAnswer | Promise<ChoiceAnswer> {
  let value: V | PromiseLike<V>;
  try {
    value = fn(req);
  } catch (error) {
    return rejected(error);
  }
  if (!isThenable(value)) return accept(value);
  return Promise.resolve(value).then(accept, rejected);
}

/**
 * A bounded map from a compiled value's key to what was compiled from it: a value is compiled
 * once, not per request, and past `max` keys the oldest is dropped (compiled again if it comes back).
 */
export class CompiledCache<V> {
  readonly #entries = new Map<unknown, V>();
  /** How many values were compiled so far (a miss compiles one). */
  compilations = 0;

  constructor(readonly max: number = MAX_COMPILED_CHOICES) {}

  /** The value compiled for `key`, compiling it with `compile` on a miss (which may throw: nothing is kept). */
  get(key: unknown, compile: () => V): V {
    const found = this.#entries.get(key);
    if (found !== undefined) return found;
    const made = compile();
    this.compilations++;
    if (this.#entries.size >= this.max) this.#entries.delete(this.#entries.keys().next().value);
    this.#entries.set(key, made);
    return made;
  }

  /** Keys held now. */
  get size(): number {
    return this.#entries.size;
  }
}
