/** The store call: the store asked under the breaker and the deadline, its answer never a rejection. */
import { monotonicNow } from '../monotonic.js';
import type {
  SlotRef,
  Store,
  StoreCheckOptions,
  StoreEntry,
  StoreMode,
  StoreSettleEntry,
  StoreVerdict,
} from '../types.js';
import type { BreakerPermit, CircuitBreaker } from './breaker.js';
import { slotsTakenBy } from './charged.js';
import { type StoreCallCounts, storeErrorCauseOf } from './counters.js';
import { DeadlineQueue, StoreTimeoutError } from './deadline.js';
import {
  answerOf,
  type SettleAnswer,
  type StoreAnswer,
  StoreUnavailable,
  settleAnswerOf,
} from './store-answer.js';

/** Resets are rarer and may touch many keys: they get at least this long, in milliseconds. */
const RESET_MIN_TIMEOUT_MS = 1000;

const BREAKER_OPEN = new StoreUnavailable('breaker-open');

/** The answer for a store call that threw, rejected or missed its deadline. */
const unavailableFor = (error: unknown): StoreUnavailable =>
  new StoreUnavailable(error instanceof StoreTimeoutError ? 'timeout' : 'error');

/**
 * One limiter's calls of its store. Every decide and settle has `timeoutMs` to answer, counted from
 * the event loop's next turn (one timer for all calls, plus one pass of I/O for an answer already
 * on its way, see `DeadlineQueue`). A throw, a rejection, a missed deadline or the wrong number of
 * verdicts answers `StoreUnavailable` (a settle: `unavailable`); a late answer is dropped, the
 * concurrency slots it took released (nobody holds them: the check was told `unavailable`). With a
 * `breaker`, an open breaker answers at once without calling the store (half-open, one probe goes
 * through), and every answer of a call that went through counts as a success or a failure. A reset
 * passes the breaker by and rejects instead (with `StoreTimeoutError` when late), after at least
 * 1 s. Every decide is counted in `counts`: calls (those the breaker turned away included),
 * failures by cause and, once `counts.timed` is set, latency.
 */
export class StoreCall {
  readonly #store: Store;
  readonly #breaker: CircuitBreaker | undefined;
  readonly #counts: StoreCallCounts | undefined;
  readonly #deadlines: DeadlineQueue;
  readonly #resets: DeadlineQueue;
  readonly #decideSync: Store['decideSync'];

  constructor(store: Store, timeoutMs: number, breaker?: CircuitBreaker, counts?: StoreCallCounts) {
    this.#store = store;
    this.#decideSync = typeof store.decideSync === 'function' ? store.decideSync.bind(store) : undefined;
    this.#breaker = breaker;
    this.#counts = counts;
    this.#deadlines = new DeadlineQueue(timeoutMs);
    this.#resets = new DeadlineQueue(Math.max(timeoutMs, RESET_MIN_TIMEOUT_MS));
  }

  /**
   * Whether the store decides in-process (`Store.decideSync`, the memory store): it answers now
   * through {@link decideNow}, with no deadline (it cannot be late) and no promise.
   */
  get answersNow(): boolean {
    return this.#decideSync !== undefined;
  }

  /** Decides every entry in one atomic store call (`Store.decide`); a failure is `StoreUnavailable`. */
  async decide(
    entries: readonly StoreEntry[],
    mode: StoreMode,
    options: StoreCheckOptions | undefined,
  ): Promise<StoreAnswer> {
    const permit = this.#permit();
    if (permit === 'reject') return BREAKER_OPEN;
    const counts = this.#counts;
    const clocked = counts?.timed === true;
    const startedAtMs = clocked ? monotonicNow() : 0;
    let answer: StoreAnswer;
    try {
      const store = this.#store;
      const verdicts = await this.#deadlines.run(
        () => (options === undefined ? store.decide(entries, mode) : store.decide(entries, mode, options)),
        mode === 'consume' ? this.#lateDecide : undefined,
        entries,
      );
      answer = answerOf(entries, verdicts);
    } catch (error) {
      answer = unavailableFor(error);
    }
    if (clocked) counts.durations.observe((monotonicNow() - startedAtMs) / 1000);
    return this.#counted(permit, answer);
  }

  /** {@link decide} for a store that {@link answersNow}: the answer now. */
  decideNow(
    entries: readonly StoreEntry[],
    mode: StoreMode,
    options: StoreCheckOptions | undefined,
  ): StoreAnswer {
    const permit = this.#permit();
    if (permit === 'reject') return BREAKER_OPEN;
    let answer: StoreAnswer;
    try {
      const decideSync = this.#decideSync as NonNullable<Store['decideSync']>;
      answer = answerOf(
        entries,
        options === undefined ? decideSync(entries, mode) : decideSync(entries, mode, options),
      );
    } catch {
      answer = new StoreUnavailable('error');
    }
    return this.#counted(permit, answer);
  }

  /**
   * A consuming decide's answer that came after its deadline: the check was answered `unavailable`,
   * so nobody holds the slots the store gave it; they are released now (bound once: no closure per
   * call). Other units it charged stay charged, as for any call the store ran but could not answer.
   */
  readonly #lateDecide = (verdicts: StoreVerdict[], entries: readonly StoreEntry[]): void => {
    const answer = answerOf(entries, verdicts);
    if (answer instanceof StoreUnavailable) return;
    const slots = slotsTakenBy(entries, answer.verdicts);
    if (slots.length > 0) void this.slots('release', slots);
  };

  /** Counts the call and asks the breaker; `reject` (counted as cause `breaker_open`): do not call. */
  #permit(): BreakerPermit | undefined {
    const counts = this.#counts;
    if (counts !== undefined) counts.calls++;
    const permit = this.#breaker?.permit();
    if (permit === 'reject' && counts !== undefined) counts.errors.breaker_open++;
    return permit;
  }

  /** Counts a failed answer by its cause and tells the breaker how the call went; hands the answer back. */
  #counted(permit: BreakerPermit | undefined, answer: StoreAnswer): StoreAnswer {
    const failed = answer instanceof StoreUnavailable;
    if (failed && this.#counts !== undefined) this.#counts.errors[storeErrorCauseOf(answer.cause)]++;
    if (permit !== undefined) this.#breakerAfter(permit, failed);
    return answer;
  }

  #breakerAfter(permit: BreakerPermit, failed: boolean): void {
    if (failed) this.#breaker?.failure(permit);
    else this.#breaker?.success();
  }

  /**
   * Settles reservations in the store: `settleSync` now (an in-process store), else `settle`
   * within the deadline. Never rejects: a throw, a rejection, a missed deadline, an open breaker
   * or a store without `settle` is `unavailable`, and counts as a failure in the breaker.
   */
  async settle(entries: readonly StoreSettleEntry[]): Promise<SettleAnswer> {
    const permit = this.#breaker?.permit();
    if (permit === 'reject') return 'unavailable';
    const store = this.#store;
    let answer: SettleAnswer;
    try {
      if (typeof store.settleSync === 'function') answer = settleAnswerOf(store.settleSync(entries), entries);
      else if (typeof store.settle !== 'function') answer = 'unavailable';
      else answer = settleAnswerOf(await this.#deadlines.run(() => store.settle!(entries)), entries);
    } catch {
      answer = 'unavailable';
    }
    if (permit !== undefined) this.#breakerAfter(permit, answer === 'unavailable');
    return answer;
  }

  /**
   * Frees or renews concurrency slots in the store (`Store.releaseSlots` / `renewSlots`, the sync
   * form when the store has it) within the deadline, past the breaker (a slot left held expires
   * after its lease anyway). One flag per slot (release: it was held; renew: it still is), or
   * undefined when the store failed, was late or holds no slots. Never rejects.
   */
  async slots(
    action: 'release' | 'renew',
    slots: readonly SlotRef[],
  ): Promise<readonly boolean[] | undefined> {
    const store = this.#store;
    const sync = action === 'release' ? store.releaseSlotsSync : store.renewSlotsSync;
    const async = action === 'release' ? store.releaseSlots : store.renewSlots;
    try {
      const flags =
        sync !== undefined
          ? sync.call(store, slots)
          : async === undefined
            ? undefined
            : await this.#deadlines.run(() => async.call(store, slots));
      return Array.isArray(flags) && flags.length === slots.length ? flags : undefined;
    } catch {
      return undefined;
    }
  }

  /** Deletes the state behind `keys` in the store. Rejects on failure or when late. */
  reset(keys: readonly string[]): Promise<void> {
    return this.#resets.run(() => this.#store.reset(keys));
  }
}
