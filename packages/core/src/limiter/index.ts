/** The limiter: createLimiter and what it is built from. */

export {
  LeaseUnitCounts,
  LimiterCounters,
  REMEMBERED_DENIAL_SOURCES,
  type RememberedDenialSource,
  type ScriptStats,
  SecondsHistogram,
  STORE_ERROR_CAUSES,
  StoreCallCounts,
  type StoreErrorCause,
} from './counters.js';
export { createLimiter } from './create-limiter.js';
export { metricOutcome } from './decision.js';
export type { Limiter, SettleUnits } from './limiter.js';
export { LIMITER_DEFAULTS, type LimiterOptions } from './options.js';
export type { SettleAnswer } from './store-answer.js';
export { type BreakerState, CircuitBreaker, callWithDeadline, StoreTimeoutError } from './store-call.js';
