/** Counting store calls as a store layer: calls, failures by cause, latency of the calls that went out. */
import { monotonicNow } from '../monotonic.js';
import { type StoreCallCounts, storeErrorCauseOf } from './counters.js';
import { type AnswerHandler, type StoreLayer, StoreUnavailable } from './store-answer.js';

/** One call under way: when it started and what it answers to. */
class TimedCall<T> {
  readonly startedAtMs = monotonicNow();
  constructor(
    readonly counts: StoreCallCounts,
    readonly then: AnswerHandler<T>,
  ) {}

  /** Counts the answer and hands it on (bound: passed to the inner layer as its handler). */
  readonly answer = (answer: Parameters<AnswerHandler<T>>[0]): T => {
    countAnswer(this.counts, answer);
    if (!(answer instanceof StoreUnavailable && answer.cause === 'breaker-open')) {
      this.counts.durations.observe((monotonicNow() - this.startedAtMs) / 1000);
    }
    return this.then(answer);
  };
}

/** Counts a failed answer by its cause. */
function countAnswer(counts: StoreCallCounts, answer: Parameters<AnswerHandler<unknown>>[0]): void {
  if (answer instanceof StoreUnavailable) counts.errors[storeErrorCauseOf(answer.cause)]++;
}

/**
 * Wraps `inner` (the breaker over the store): every decide is a store call, counted in `counts`
 * with its failure cause; when `timed`, the latency of each call that reached the store too (an
 * in-process store is not timed: it answers now). Resets and settles pass straight on.
 */
export function withStoreMetrics(inner: StoreLayer, counts: StoreCallCounts, timed: boolean): StoreLayer {
  return {
    decide(entries, mode, options, then) {
      counts.calls++;
      if (timed) return inner.decide(entries, mode, options, new TimedCall(counts, then).answer);
      return inner.decide(entries, mode, options, (answer) => {
        countAnswer(counts, answer);
        return then(answer);
      });
    },
    reset: (keys) => inner.reset(keys),
    settle: (entries, where) => inner.settle(entries, where),
  };
}
