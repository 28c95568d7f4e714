/**
 * The algorithms in TypeScript, operation for operation the same as lua/*.lua, so
 * MemoryStore and the Redis decide script decide identically for identical inputs and clock.
 * One module per algorithm; registry.ts lists them.
 */
export { type ConcurrencyState, concurrency, holdsSlots } from './concurrency.js';
export { type FixedWindowState, fixedWindow } from './fixed-window.js';
export { type GcraState, gcra } from './gcra.js';
export { BUCKET_LIMITS, WINDOW_LIMITS } from './limits.js';
export {
  type AlgorithmModule,
  type CompiledLimits,
  defineAlgorithm,
  type LimitRules,
  LUA_COMMON_RESULT_FIELDS,
  type LuaFacts,
  type PolicyLimitCap,
  STATE_NUMBERS_MAX,
  type StateCodec,
  type StoreRules,
} from './module.js';
export { ALGORITHM_LIST, ALGORITHM_NAMES, ALGORITHMS, type Algorithm, isAlgorithm } from './registry.js';
export { LOG_CUM_MAX, SLIDING_LOG_MAX_LIMIT, type SlidingLogState, slidingLog } from './sliding-log.js';
export { type SlidingWindowState, slidingWindow } from './sliding-window.js';
export { type TokenBucketState, tokenBucket } from './token-bucket.js';
export {
  type AlgorithmFn,
  type AlgorithmParams,
  EPS,
  type Evaluation,
  type SettleFn,
  type Settlement,
  type SettleParams,
  settleCeiling,
  whole,
} from './types.js';
