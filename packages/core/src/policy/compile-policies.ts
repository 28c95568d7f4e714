/** `compilePolicies`: an adapter's policy options (policies, or the limit + window shorthand) as compiled policies. */
import { RateLimitOptionsError } from '../options/options-error.js';
import type { Algorithm, CompiledPolicy, FailMode, PolicyInput } from '../types.js';
import { FAIL_MODES } from './defaults.js';
import { definePolicies, isCompiledPolicy } from './define-policy.js';

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
 * Validates and compiles the policies these options describe, without building a limiter:
 * `policies`, or one policy named `default` from `limit` + `window` (+ `algorithm`); each
 * policy without a fail mode gets `failMode`, and with `shadow` each policy is a shadow policy
 * (a policy already compiled by `definePolicy()` is taken as it is).
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
  const shorthand = options.limit !== undefined || options.window !== undefined;
  if (shorthand && options.policies !== undefined) {
    throw new RateLimitOptionsError(
      options.limit !== undefined ? 'limit' : 'window',
      options.limit ?? options.window,
      'cannot be combined with "policies" (the shorthand defines the only policy)',
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
  const inputs = shorthand ? [shorthandPolicy(options, source)] : listedPolicies(options.policies, source);
  return definePolicies(
    inputs.map((input) => {
      if (isCompiledPolicy(input)) return input;
      let p = input;
      if (options.failMode !== undefined && p.failMode === undefined)
        p = { ...p, failMode: options.failMode };
      if (options.shadow === true && p.shadow !== true) p = { ...p, shadow: true };
      return p;
    }),
  );
}

function shorthandPolicy(options: PolicySetOptions, source: string): PolicyInput {
  const { limit, window } = options;
  if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit <= 0) {
    throw new RateLimitOptionsError('limit', limit, 'must be a positive integer', source);
  }
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
