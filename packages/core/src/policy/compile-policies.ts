/** `compilePolicies`: an adapter's policy options (policies, or the limit + window shorthand) as compiled policies. */
import { RateLimitOptionsError } from '../options/options-error.js';
import type { Algorithm, CompiledPolicy, FailMode, PolicyInput } from '../types.js';
import { FAIL_MODES } from './defaults.js';
import { definePolicies, isCompiledPolicy } from './define-policy.js';
import { isPositiveInteger } from './positive-integer.js';

/** The options that say which policies a limiter gets, as every adapter and the Nest module take them. */
export interface PolicySetOptions {
  /** The policies; or give `limit` and `window`. */
  readonly policies?: readonly (PolicyInput | CompiledPolicy)[];
  /** Shorthand with `window`: one policy named `default`. */
  readonly limit?: number;
  /** Shorthand with `limit`: `'1m'`, `'10s'` or milliseconds. */
  readonly window?: string | number;
  /** The shorthand policy's algorithm (the policy default when unset). */
  readonly algorithm?: Algorithm;
  /** The fail mode of every policy that names none. */
  readonly failMode?: FailMode;
  /** Shadow mode for every policy: decide and record, never deny. */
  readonly shadow?: boolean;
}

/**
 * A policy input as the options prepare it: the options' `failMode` when it sets none, and with
 * `shadow` a shadow policy. A policy compiled by `definePolicy()` is taken as it is (it cannot be
 * re-validated with changes: the caller shadows its decisions instead). Every path that builds
 * policies from adapter or module options prepares them here.
 */
export function preparePolicy(
  input: PolicyInput | CompiledPolicy,
  options: Pick<PolicySetOptions, 'failMode' | 'shadow'>,
): PolicyInput {
  if (isCompiledPolicy(input)) return input;
  let p: PolicyInput = input;
  if (options.failMode !== undefined && p.failMode === undefined) p = { ...p, failMode: options.failMode };
  if (options.shadow === true && p.shadow !== true) p = { ...p, shadow: true };
  return p;
}

/**
 * The policy inputs these options describe (not yet prepared): `policies`, or one policy named
 * `default` from `limit` + `window` (+ `algorithm`). `hasLimiter`: a shared limiter is given too.
 *
 * @throws RateLimitOptionsError naming the option and value
 */
export function policyInputs(
  options: PolicySetOptions,
  source = 'rateLimit',
  hasLimiter = false,
): readonly (PolicyInput | CompiledPolicy)[] {
  const shorthand = checkPolicyForm(options, source, hasLimiter);
  return shorthand ? [shorthandPolicy(options, source)] : listedPolicies(options.policies, source);
}

/**
 * The ways of giving policies do not mix: the `limit` + `window` shorthand goes alone, and
 * `algorithm` goes with it only. Returns whether the shorthand is used.
 *
 * @throws RateLimitOptionsError naming the option and value
 */
export function checkPolicyForm(
  options: PolicySetOptions,
  source = 'rateLimit',
  hasLimiter = false,
): boolean {
  const shorthand = options.limit !== undefined || options.window !== undefined;
  if (shorthand && (options.policies !== undefined || hasLimiter)) {
    throw new RateLimitOptionsError(
      options.limit !== undefined ? 'limit' : 'window',
      options.limit ?? options.window,
      'cannot be combined with "policies" or "limiter" (the shorthand defines the only policy)',
      source,
    );
  }
  if (options.algorithm !== undefined && !shorthand) {
    throw new RateLimitOptionsError(
      'algorithm',
      options.algorithm,
      'applies to the "limit" + "window" shorthand only',
      source,
    );
  }
  return shorthand;
}

/**
 * Validates and compiles the policies these options describe, without building a limiter
 * (`policyInputs`, each prepared by `preparePolicy`).
 *
 * @param options the policy options
 * @param source the message prefix of option errors (`rateLimit` by default)
 * @throws RateLimitOptionsError naming the option and value; PolicyError for an invalid policy
 */
export function compilePolicies(options: PolicySetOptions, source = 'rateLimit'): readonly CompiledPolicy[] {
  if (options.failMode !== undefined && !FAIL_MODES.includes(options.failMode)) {
    throw new RateLimitOptionsError(
      'failMode',
      options.failMode,
      `must be one of ${FAIL_MODES.join(', ')}`,
      source,
    );
  }
  if (options.shadow !== undefined && typeof options.shadow !== 'boolean') {
    throw new RateLimitOptionsError('shadow', options.shadow, 'must be true or false', source);
  }
  return definePolicies(policyInputs(options, source).map((input) => preparePolicy(input, options)));
}

function shorthandPolicy(options: PolicySetOptions, source: string): PolicyInput {
  const { limit } = options;
  if (!isPositiveInteger(limit)) {
    throw new RateLimitOptionsError('limit', limit, 'must be a positive integer', source);
  }
  return shorthandInput(limit, options, source);
}

/**
 * The shorthand's one policy for `limit` (checked by the caller): named `default`, with the
 * options' `window` (required) and `algorithm`.
 *
 * @throws RateLimitOptionsError when `window` is unset
 */
export function shorthandInput(
  limit: number,
  options: Pick<PolicySetOptions, 'window' | 'algorithm'>,
  source = 'rateLimit',
): PolicyInput {
  const { window } = options;
  if (window === undefined) {
    throw new RateLimitOptionsError(
      'window',
      window,
      "is required with \"limit\" (e.g. '1m', '10s' or milliseconds)",
      source,
    );
  }
  return {
    name: 'default',
    ...(options.algorithm !== undefined && { algorithm: options.algorithm }),
    limit,
    window,
  };
}

function listedPolicies(
  policies: PolicySetOptions['policies'],
  source: string,
): readonly (PolicyInput | CompiledPolicy)[] {
  if (!Array.isArray(policies) || policies.length === 0) {
    throw new RateLimitOptionsError(
      'policies',
      policies,
      'must be a non-empty array of policies (or give "limit" and "window")',
      source,
    );
  }
  for (const entry of policies as readonly unknown[]) {
    if (typeof entry === 'string') {
      throw new RateLimitOptionsError(
        'policies',
        entry,
        'names a policy, which needs a shared "limiter"',
        source,
      );
    }
    if (typeof entry !== 'object' || entry === null) {
      throw new RateLimitOptionsError('policies', entry, 'must hold policy names or policies', source);
    }
  }
  return policies;
}
