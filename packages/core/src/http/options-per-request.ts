/**
 * The adapter options when `policies` or `limit` is a function of the request: checked at
 * construction (everything but the function's answers), resolved into a `PolicyChooser`.
 */
import type { Limiter } from '../limiter/index.js';
import { checkOption, HTTP_OPTIONS, type RateLimitOptions } from '../options/index.js';
import { RateLimitOptionsError } from '../options/options-error.js';
import { definePolicy, isCompiledPolicy } from '../policy/index.js';
import { MemoryStore } from '../stores/memory-store.js';
import type { PolicyInput } from '../types.js';
import type { Reporter } from '../warn.js';
import { chooseLimit, chooseNamedPolicies, choosePolicyInputs, ownFailMode } from './choose-policies.js';
import type { PolicyChooser } from './policy-choice.js';

/** How a per-request form is resolved. */
export interface PerRequestResolution<Req> {
  /** The shared limiter, or undefined when each answered value gets a limiter of its own. */
  readonly limiter: Limiter | undefined;
  readonly choose: PolicyChooser<Req>;
  /** Shadow applied to each decision (see `ResolvedRateLimitOptions.shadowDecisions`). */
  readonly shadowDecisions: boolean;
  /**
   * The names of every policy a request may be given, for checking a `cost` record: undefined
   * when the function answers policies of its own (their names are known per request).
   */
  readonly costNames: readonly string[] | undefined;
}

const fail = (option: string, value: unknown, requirement: string) =>
  new RateLimitOptionsError(option, value, requirement);

/**
 * The chooser of `options` when `policies` or `limit` is a function, or undefined when neither
 * is. Called after the shorthand's conflicts were checked (`limit` with `policies` or `limiter`).
 *
 * @throws RateLimitOptionsError for options that do not fit (as the fixed forms do)
 * @throws PolicyError for a shorthand whose `window` or `algorithm` is bad (checked with a limit of 1)
 */
export function choosePerRequest<Req>(
  options: RateLimitOptions<Req>,
  adapter: Reporter,
  shadow: boolean,
): PerRequestResolution<Req> | undefined {
  const { policies, limit } = options;
  if (typeof policies !== 'function' && typeof limit !== 'function') return undefined;
  if (options.limiter !== undefined) {
    checkOption(HTTP_OPTIONS.limiter, 'limiter', options.limiter, fail);
    for (const name of ['store', 'prefix', 'failMode'] as const) {
      if (options[name] !== undefined) {
        throw fail(name, options[name], 'belongs to the shared "limiter" (set it there)');
      }
    }
    const choose = chooseNamedPolicies<Req>(options.limiter, policies as (req: Req) => unknown, adapter);
    const costNames = options.limiter.policies.map((p) => p.name);
    return { limiter: options.limiter, choose, shadowDecisions: shadow, costNames };
  }
  checkOption(HTTP_OPTIONS.store, 'store', options.store, fail);
  checkOption(HTTP_OPTIONS.prefix, 'prefix', options.prefix, fail);
  // Every limiter compiled here shares one store, so a client's state follows it across values.
  const store = options.store ?? new MemoryStore();
  const { failMode } = options;
  const prepare = (input: PolicyInput): PolicyInput => {
    let p = input;
    if (isCompiledPolicy(p)) return p;
    if (failMode !== undefined && p.failMode === undefined) p = { ...p, failMode };
    if (shadow && p.shadow !== true) p = { ...p, shadow: true };
    return p;
  };
  const target = { store, prefix: options.prefix, prepare, failMode: ownFailMode(failMode) };
  if (typeof limit === 'function') {
    const { window, algorithm } = options;
    if (window === undefined) {
      throw fail('window', window, "is required with \"limit\" (e.g. '1m', '10s' or milliseconds)");
    }
    const policyOf = (n: number): PolicyInput => ({
      name: 'default',
      ...(algorithm !== undefined && { algorithm }),
      limit: n,
      window,
    });
    definePolicy(prepare(policyOf(1))); // a bad window or algorithm throws now, not per request
    const choose = chooseLimit<Req>(limit as (req: Req) => unknown, policyOf, target, adapter);
    return { limiter: undefined, choose, shadowDecisions: false, costNames: ['default'] };
  }
  // A policy from definePolicy() cannot take shadow: with `shadow`, every decision is shadowed too.
  const choose = choosePolicyInputs<Req>(policies as (req: Req) => unknown, target, adapter);
  return { limiter: undefined, choose, shadowDecisions: shadow, costNames: undefined };
}
