/** The circuit breaker as a store layer: after repeated failures, no store call for a cool-down. */
import type { CircuitBreaker } from './breaker.js';
import type { StoreCallCounts } from './counters.js';
import { type StoreLayer, StoreUnavailable } from './store-answer.js';

const BREAKER_OPEN = new StoreUnavailable('breaker-open');

/**
 * Wraps `inner` behind `breaker`: while it is open a call answers `StoreUnavailable` at once,
 * without reaching the store; half-open, one probe goes through. Every answer of a call that went
 * through counts: `StoreUnavailable` as a failure, verdicts as a success; a settle likewise (an
 * open breaker answers it `unavailable`). Resets pass straight on. A call turned away counts in
 * `counts` as a store call that failed with cause `breaker_open`.
 */
export function withBreaker(
  inner: StoreLayer,
  breaker: CircuitBreaker,
  counts?: StoreCallCounts,
): StoreLayer {
  return {
    decide(entries, mode, options, then) {
      const permit = breaker.permit();
      if (permit === 'reject') {
        if (counts !== undefined) {
          counts.calls++;
          counts.errors.breaker_open++;
        }
        return then(BREAKER_OPEN);
      }
      return inner.decide(entries, mode, options, (answer) => {
        if (answer instanceof StoreUnavailable) breaker.failure(permit);
        else breaker.success();
        return then(answer);
      });
    },
    reset: (keys) => inner.reset(keys),
    async settle(entries, where) {
      const permit = breaker.permit();
      if (permit === 'reject') return 'unavailable';
      const answer = await inner.settle(entries, where);
      if (answer === 'unavailable') breaker.failure(permit);
      else breaker.success();
      return answer;
    },
  };
}
