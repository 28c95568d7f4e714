/**
 * The choice of policies, for every form of the adapter options: which limiter decides and which
 * of its policies apply, as one `PolicyChooser` the request path asks. A fixed list (a shared
 * `limiter`, with or without `policies` naming some of its policies; `policies` as inputs; the
 * `limit` + `window` shorthand) is a choice that never changes; `policies` or `limit` as a
 * function of the request chooses per request.
 */
import { createLimiter, type Limiter } from '../limiter/index.js';
import { checkOption, HTTP_OPTIONS, type RateLimitOptions } from '../options/index.js';
import { closestName } from '../options/option-names.js';
import { RateLimitOptionsError } from '../options/options-error.js';
import { checkPolicyForm, policyInputs, preparePolicy, shorthandInput } from '../policy/compile-policies.js';
import { definePolicy, isCompiledPolicy } from '../policy/define-policy.js';
import { MemoryStore } from '../stores/memory-store.js';
import type { PolicyInput } from '../types.js';
import type { Reporter } from '../warn.js';
import { chooseLimit, chooseNamedPolicies, choosePolicyInputs, ownFailMode } from './choose-policies.js';
import { fixedChoice, type PolicyChooser } from './policy-choice.js';

/** How the policies of a handler are chosen. */
export interface ResolvedChoice<Req> {
  /** The limiter fixed here (shared or built), or undefined when each answered value gets its own. */
  readonly limiter: Limiter | undefined;
  /** The fixed limiter's policies that apply, or undefined for all of them (or when chosen per request). */
  readonly policyNames: readonly string[] | undefined;
  /** Chooses the limiter and policies of a request (for a fixed list, always the same). */
  readonly choose: PolicyChooser<Req>;
  /** Shadow applied to each decision (see `ResolvedRateLimitOptions.shadowDecisions`). */
  readonly shadowDecisions: boolean;
  /**
   * The names of every policy a request may be given, for checking a `cost` record: undefined
   * when a function answers policies of its own (their names are known per request).
   */
  readonly costNames: readonly string[] | undefined;
}

/** How a surface builds the limiters of its policies (the Nest module's own, with its limiter options). */
export interface ChoiceSettings {
  /**
   * Builds the limiter of prepared policies (the fixed list's, and each value compiled per
   * request); default `createLimiter` with `store` and `prefix`.
   */
  readonly createLimiter?: ((policies: readonly PolicyInput[]) => Limiter) | undefined;
  /** The policy a `limit` function's answer becomes; default the shorthand's `default` policy. */
  readonly limitPolicy?: ((limit: number) => PolicyInput) | undefined;
}

const fail = (option: string, value: unknown, requirement: string) =>
  new RateLimitOptionsError(option, value, requirement);

/**
 * The choice of policies `options` describe. Called once, at construction.
 *
 * @throws RateLimitOptionsError for options that do not fit, naming the option and the value
 * @throws PolicyError for a bad policy (a shorthand per request is checked with a limit of 1)
 */
export function resolveChoice<Req>(
  options: RateLimitOptions<Req>,
  reporter: Reporter,
  shadow: boolean,
  settings: ChoiceSettings = {},
): ResolvedChoice<Req> {
  const forms = options as Parameters<typeof checkPolicyForm>[0];
  checkPolicyForm(forms, 'rateLimit', options.limiter !== undefined);
  if (options.limiter !== undefined) return sharedChoice(options, reporter, shadow);
  checkOption(HTTP_OPTIONS.store, 'store', options.store, fail);
  if (typeof options.policies === 'function' || typeof options.limit === 'function') {
    checkOption(HTTP_OPTIONS.prefix, 'prefix', options.prefix, fail);
    return perRequestChoice(options, reporter, shadow, settings);
  }
  if (options.policies === undefined && options.limit === undefined && options.window === undefined) {
    throw fail(
      'policies',
      undefined,
      'is required: give "policies", "limit" and "window", or a shared "limiter"',
    );
  }
  // A policy from definePolicy() cannot be re-validated with changes: shadow its decisions instead.
  const inputs = policyInputs(forms);
  const shadowDecisions = shadow && inputs.some(isCompiledPolicy);
  const policies = inputs.map((input) => preparePolicy(input, { failMode: options.failMode, shadow }));
  const limiter =
    settings.createLimiter?.(policies) ??
    createLimiter({
      policies,
      ...(options.store !== undefined && { store: options.store }),
      ...(options.prefix !== undefined && { prefix: options.prefix }),
    });
  const costNames = limiter.policies.map((p) => p.name);
  return {
    limiter,
    policyNames: undefined,
    choose: fixedChoice(limiter, undefined),
    shadowDecisions,
    costNames,
  };
}

/** A shared `limiter`: all its policies, those `policies` names, or those a function names per request. */
function sharedChoice<Req>(
  options: RateLimitOptions<Req>,
  reporter: Reporter,
  shadow: boolean,
): ResolvedChoice<Req> {
  checkOption(HTTP_OPTIONS.limiter, 'limiter', options.limiter, fail);
  for (const name of ['store', 'prefix', 'failMode'] as const) {
    if (options[name] !== undefined)
      throw fail(name, options[name], 'belongs to the shared "limiter" (set it there)');
  }
  const limiter = options.limiter as Limiter;
  const costNames = limiter.policies.map((p) => p.name);
  // A shared limiter cannot carry shadow itself: shadow each decision.
  if (typeof options.policies === 'function') {
    const choose = chooseNamedPolicies<Req>(limiter, options.policies as (req: Req) => unknown, reporter);
    return { limiter, policyNames: undefined, choose, shadowDecisions: shadow, costNames };
  }
  const names = options.policies === undefined ? undefined : sharedPolicyNames(costNames, options.policies);
  return {
    limiter,
    policyNames: names,
    choose: fixedChoice(limiter, names),
    shadowDecisions: shadow,
    costNames,
  };
}

/** `policies` with a shared limiter: names of its policies (`known`), each once. */
function sharedPolicyNames(known: readonly string[], policies: readonly (PolicyInput | string)[]): string[] {
  const names: string[] = [];
  for (const entry of policies) {
    if (typeof entry !== 'string') {
      throw fail(
        'policies',
        entry,
        "must name the shared limiter's policies (define new policies in createLimiter())",
      );
    }
    if (!known.includes(entry)) {
      const closest = closestName(entry, known);
      throw fail(
        'policies',
        entry,
        `must name a policy of the limiter (${known.join(', ')})${closest === undefined ? '' : `: did you mean "${closest}"?`}`,
      );
    }
    if (!names.includes(entry)) names.push(entry);
  }
  return names;
}

/** `policies` or `limit` as a function without a shared limiter: each answered value compiled once. */
function perRequestChoice<Req>(
  options: RateLimitOptions<Req>,
  reporter: Reporter,
  shadow: boolean,
  settings: ChoiceSettings,
): ResolvedChoice<Req> {
  // Every limiter compiled here shares one store, so a client's state follows it across values.
  const store = options.store ?? new MemoryStore();
  const { failMode } = options;
  const prepare = (input: PolicyInput): PolicyInput => preparePolicy(input, { failMode, shadow });
  const target = {
    store,
    prefix: options.prefix,
    prepare,
    failMode: ownFailMode(failMode),
    create: settings.createLimiter,
  };
  if (typeof options.limit === 'function') {
    const policyOf = settings.limitPolicy ?? ((n: number) => shorthandInput(n, options));
    const sample = policyOf(1);
    if (!isCompiledPolicy(sample)) definePolicy(prepare(sample)); // a bad window or algorithm throws now
    const choose = chooseLimit<Req>(options.limit as (req: Req) => unknown, policyOf, target, reporter);
    // A policy from definePolicy() cannot take shadow: with `shadow`, its decisions are shadowed.
    const shadowDecisions = shadow && isCompiledPolicy(sample);
    return { limiter: undefined, policyNames: undefined, choose, shadowDecisions, costNames: [sample.name] };
  }
  // A policy from definePolicy() cannot take shadow: with `shadow`, every decision is shadowed too.
  const choose = choosePolicyInputs<Req>(options.policies as (req: Req) => unknown, target, reporter);
  return {
    limiter: undefined,
    policyNames: undefined,
    choose,
    shadowDecisions: shadow,
    costNames: undefined,
  };
}
