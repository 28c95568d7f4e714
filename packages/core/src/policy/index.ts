/** Policies: validation, compilation, durations and rates. */
export { compilePolicies, type PolicySetOptions } from './compile-policies.js';
export { ALGORITHMS, FAIL_MODES, POLICY_DEFAULTS, SLIDING_LOG_MAX_LIMIT } from './defaults.js';
export { definePolicies, definePolicy, isCompiledPolicy } from './define-policy.js';
export { MAX_DURATION_MS, type ParsedRate, parseDuration, parseRate } from './duration.js';
export { PolicyError } from './errors.js';
