/** Policies: validation, compilation, durations and rates. */
export { ALGORITHM_NAMES } from '../algorithms/registry.js';
export { SLIDING_LOG_MAX_LIMIT } from '../algorithms/sliding-log.js';
export { FAIL_MODES, POLICY_DEFAULTS } from './defaults.js';
export { definePolicies, definePolicy, isCompiledPolicy } from './define-policy.js';
export { MAX_DURATION_MS, type ParsedRate, parseDuration, parseRate } from './duration.js';
export { PolicyError } from './errors.js';
