/** The store under a deadline: the innermost store layer, where a `Store` becomes a `StoreLayer`. */
import { monotonicNow } from '../monotonic.js';
import type { Store, StoreCheckOptions, StoreEntry, StoreMode } from '../types.js';
import { type StoreCallCounts, storeErrorCauseOf } from './counters.js';
import { DeadlineQueue, StoreTimeoutError } from './deadline.js';
import {
  answerOf,
  type SettleAnswer,
  type StoreAnswer,
  type StoreLayer,
  StoreUnavailable,
  settleAnswerOf,
} from './store-answer.js';

/** The answer for a store call that threw, rejected or missed its deadline. */
const unavailableFor = (error: unknown): StoreUnavailable =>
  new StoreUnavailable(error instanceof StoreTimeoutError ? 'timeout' : 'error');

/** Counts a failed answer by its cause; hands the answer back. */
function counted(counts: StoreCallCounts | undefined, answer: StoreAnswer): StoreAnswer {
  if (counts !== undefined && answer instanceof StoreUnavailable)
    counts.errors[storeErrorCauseOf(answer.cause)]++;
  return answer;
}

/** Resets are rarer and may touch many keys: they get at least this long, in milliseconds. */
const RESET_MIN_TIMEOUT_MS = 1000;

/**
 * Wraps `store`: every call has `timeoutMs` to answer, counted from the event loop's next turn (one timer for all calls, plus one pass of
 * I/O for an answer already on its way, see `DeadlineQueue`). A throw, a rejection, a missed
 * deadline or the wrong number of verdicts answers `StoreUnavailable`; a late answer is dropped.
 * A store that decides in-process (`decideSync`) is asked synchronously: it cannot be late, so it
 * gets no deadline and the answer comes now. A reset rejects instead (with `StoreTimeoutError`
 * when late), after at least 1 s. Every decide is counted in `counts` (calls, failures by cause and,
 * for a store that answers later and once `counts.timed` is set, latency).
 */
export function withDeadline(store: Store, timeoutMs: number, counts?: StoreCallCounts): StoreLayer {
  const resets = new DeadlineQueue(Math.max(timeoutMs, RESET_MIN_TIMEOUT_MS));
  const deadlines = new DeadlineQueue(timeoutMs);
  const reset = (keys: readonly string[]): Promise<void> => resets.run(() => store.reset(keys));
  const settle = settleUnder(store, deadlines);
  if (typeof store.decideSync === 'function') {
    const decideSync = store.decideSync.bind(store);
    const answerNow = (entries: readonly StoreEntry[], mode: StoreMode, options?: StoreCheckOptions) => {
      try {
        return answerOf(
          entries,
          options === undefined ? decideSync(entries, mode) : decideSync(entries, mode, options),
        );
      } catch {
        return new StoreUnavailable('error');
      }
    };
    return {
      // Outside the try: a handler's own throw is not the store's failure.
      decide(entries, mode, options, then) {
        if (counts !== undefined) counts.calls++;
        return then(counted(counts, answerNow(entries, mode, options)));
      },
      reset,
      settle,
    };
  }
  return {
    decide(entries, mode, options, then) {
      const clocked = counts?.timed === true;
      const startedAtMs = clocked ? monotonicNow() : 0;
      if (counts !== undefined) counts.calls++;
      const timed = (answer: StoreAnswer) => {
        if (clocked) counts.durations.observe((monotonicNow() - startedAtMs) / 1000);
        return then(counted(counts, answer));
      };
      return deadlines.settle(
        () => (options === undefined ? store.decide(entries, mode) : store.decide(entries, mode, options)),
        (verdicts) => timed(answerOf(entries, verdicts)),
        (error) => timed(unavailableFor(error)),
      );
    },
    reset,
    settle,
  };
}

/**
 * The store's settle under the deadline: `settleSync` now (an in-process store), else `settle`
 * within the deadline; a throw, a rejection, a missed deadline or no settle at all is `unavailable`.
 */
function settleUnder(store: Store, deadlines: DeadlineQueue): StoreLayer['settle'] {
  return async (entries) => {
    try {
      if (typeof store.settleSync === 'function') return settleAnswerOf(store.settleSync(entries), entries);
      if (typeof store.settle !== 'function') return 'unavailable';
      const settle = store.settle.bind(store);
      return settleAnswerOf(await deadlines.run(() => settle(entries)), entries);
    } catch {
      return 'unavailable' as SettleAnswer;
    }
  };
}
