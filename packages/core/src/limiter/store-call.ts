/**
 * The store call, one step: the store asked under the circuit breaker (after repeated failures,
 * no call for a cool-down) and the deadline (one timer for every call), its answer never a
 * rejection: the verdicts and who gave them, or `StoreUnavailable` with its cause.
 */

import { STORE_TIMEOUT_ERROR_BRAND } from '../error-brands.js';
import { monotonicNow } from '../monotonic.js';
import type {
  Clock,
  SlotRef,
  Store,
  StoreCheckOptions,
  StoreEntry,
  StoreMode,
  StoreSettleEntry,
  StoreVerdict,
} from '../types.js';
import { slotsTakenBy } from './charged.js';
import { type StoreCallCounts, storeErrorCauseOf } from './counters.js';
import { type SettleAnswer, type StoreAnswer, StoreUnavailable, settleAnswerOf } from './store-answer.js';

/** The store's verdicts as an answer, or `StoreUnavailable` when they do not fit the entries. */
export function answerOf(entries: readonly StoreEntry[], verdicts: unknown): StoreAnswer {
  if (!Array.isArray(verdicts) || verdicts.length !== entries.length) {
    return new StoreUnavailable('wrong-verdict-count');
  }
  return { source: 'store', verdicts: verdicts as StoreVerdict[], results: undefined };
}

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

/** Where the breaker stands. */
export type BreakerState = 'closed' | 'open' | 'half-open';

/** What the breaker allows for one call. */
export type BreakerPermit = 'call' | 'probe' | 'reject';

/**
 * Counts consecutive store failures. At `failureThreshold` it opens: calls are rejected without
 * touching the store until `cooldownMs` has passed, then ONE probe call goes through (half-open).
 * A success anywhere closes it; a failed probe opens it for another cool-down.
 */
export class CircuitBreaker {
  private failures = 0;
  private openedAtMs: number | undefined;
  private probing = false;

  /**
   * @param failureThreshold consecutive failures that open the breaker (>= 1)
   * @param cooldownMs how long an open breaker rejects calls before a probe
   * @param clock time source
   */
  constructor(
    private readonly failureThreshold: number,
    private readonly cooldownMs: number,
    private readonly clock: Clock,
  ) {}

  /** The current state (for health checks and tests). */
  get state(): BreakerState {
    if (this.openedAtMs === undefined) return 'closed';
    return this.probing || this.clock() - this.openedAtMs >= this.cooldownMs ? 'half-open' : 'open';
  }

  /** Milliseconds until an open breaker lets a probe through; 0 when closed or half-open. */
  get remainingCooldownMs(): number {
    if (this.openedAtMs === undefined) return 0;
    return Math.max(0, this.openedAtMs + this.cooldownMs - this.clock());
  }

  /** Asks to call the store. `reject` means: treat as a failure without calling. */
  permit(): BreakerPermit {
    if (this.openedAtMs === undefined) return 'call';
    if (this.probing) return 'reject';
    const now = this.clock();
    // A clock that went backwards restarts the cool-down rather than skipping it.
    if (now < this.openedAtMs) this.openedAtMs = now;
    if (now - this.openedAtMs < this.cooldownMs) return 'reject';
    this.probing = true;
    return 'probe';
  }

  /** The store answered. */
  success(): void {
    this.failures = 0;
    this.openedAtMs = undefined;
    this.probing = false;
  }

  /** The store failed (error or deadline). `permit` is what `permit()` returned for this call. */
  failure(permit: BreakerPermit): void {
    this.failures++;
    if (permit === 'probe') {
      this.probing = false;
      this.openedAtMs = this.clock();
    } else if (this.openedAtMs === undefined && this.failures >= this.failureThreshold) {
      this.openedAtMs = this.clock();
    }
  }
}

/** The store did not answer within the limiter's `timeoutMs`. */
export class StoreTimeoutError extends Error {
  /** The brand `isStoreTimeoutError` reads: it holds across copies of the package, `instanceof` does not. */
  get [STORE_TIMEOUT_ERROR_BRAND](): true {
    return true;
  }

  /** The deadline that passed. */
  readonly timeoutMs: number;

  constructor(timeoutMs: number) {
    super(`store did not answer within ${timeoutMs} ms`);
    this.name = 'StoreTimeoutError';
    this.timeoutMs = timeoutMs;
  }
}

/**
 * Runs `call` and settles with its result, or rejects with `StoreTimeoutError` once `timeoutMs`
 * has passed (counted from the event loop's next turn, see `DeadlineQueue`) and one more pass of
 * I/O brought no answer (see `afterIoPass`). A late answer is dropped (and a late failure
 * swallowed), never surfaced. Many calls with one deadline share a `DeadlineQueue` instead.
 */
export function callWithDeadline<T>(call: () => Promise<T>, timeoutMs: number): Promise<T> {
  return new DeadlineQueue(timeoutMs).run(call);
}

/**
 * Runs `expire` after one more pass of the event loop's I/O. Timers run before sockets are
 * read: an answer that arrived in time but is still unread (the process was busy) settles its
 * call in that pass, so a deadline never throws away a decision Redis made in time.
 */
function afterIoPass(expire: () => void): void {
  setTimeout(expire, 0);
}

/** Hands a late answer to `late`; a throw there is dropped, as the late answer itself would be. */
function lateAnswer<T, C>(late: (value: T, context: C) => void, value: T, context: C): void {
  try {
    late(value, context);
  } catch {
    // Nobody waits for a late answer: there is no one to tell.
  }
}

interface Pending {
  /** When the call is due (`monotonicNow`); `UNSTAMPED` until the loop's next turn starts its clock. */
  dueAt: number;
  readonly fail: (error: unknown) => void;
  done: boolean;
}

/** The due time of a call whose clock has not started yet. */
const UNSTAMPED = Number.POSITIVE_INFINITY;

/**
 * Deadlines for many calls that share one `timeoutMs`, on ONE timer: deadlines fall in call
 * order, so a queue ordered by start time is ordered by deadline too. A call costs a push and a
 * flag, not a `setTimeout` + `clearTimeout`; the timer wakes at the oldest pending deadline,
 * rejects what is due, drops what settled, and sleeps until the next. Memory is bounded by the
 * calls started within one `timeoutMs`.
 *
 * A call's clock starts at the event loop's next turn (a 0 ms timer, one per turn, stamps every
 * call made since; it runs after the turn's I/O and a batch flushed with `setImmediate`), not when
 * the call was made: a call made while the process is busy (a turn
 * that parses a thousand requests, a long synchronous handler) leaves the process and its answer
 * can be read only once the loop runs again, so that busy time is not the store's and never
 * turns a healthy store's answer into a timeout. Without a stall the two differ by one turn.
 */
export class DeadlineQueue {
  private readonly queue: Pending[] = [];
  private head = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** Calls made since the last stamp, waiting for their clock to start. */
  private unstamped: Pending[] = [];

  /** @param timeoutMs the deadline of every call, in milliseconds */
  constructor(private readonly timeoutMs: number) {}

  /** Calls held (pending, or settled but not yet dropped): bounded by the calls of one `timeoutMs`. */
  get size(): number {
    return this.queue.length - this.head;
  }

  /**
   * Runs `call` and settles with its result, or rejects with its error or, once the deadline has
   * passed with no answer, with `StoreTimeoutError`. Settles once: a late failure is dropped, and
   * so is a late answer, after it went to `late` (with `context`) when given: what a call did in
   * the store although its caller was told it failed is undone there (a slot it took is freed).
   */
  run<T, C = undefined>(
    call: () => Promise<T>,
    late?: (value: T, context: C) => void,
    context?: C,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let pending: Promise<T>;
      try {
        pending = call();
      } catch (error) {
        reject(error);
        return;
      }
      const entry: Pending = { dueAt: UNSTAMPED, fail: reject, done: false };
      this.dropSettled();
      this.queue.push(entry);
      if (this.unstamped.length === 0) setTimeout(this.stamp, 0);
      this.unstamped.push(entry);
      Promise.resolve(pending).then(
        (value) => {
          if (entry.done) {
            if (late !== undefined) lateAnswer(late, value, context as C);
            return;
          }
          entry.done = true;
          resolve(value);
        },
        (error: unknown) => {
          if (entry.done) return;
          entry.done = true;
          reject(error);
        },
      );
    });
  }

  /** Starts the clock of every call made since the last stamp, and arms the timer for them. */
  private readonly stamp = (): void => {
    const dueAt = monotonicNow() + this.timeoutMs;
    for (const entry of this.unstamped) entry.dueAt = dueAt;
    this.unstamped = [];
    if (this.timer === undefined && this.head < this.queue.length) this.arm(this.queue[this.head]!.dueAt);
  };

  /** Drops settled calls from the front, so a loop that never yields to timers stays small. */
  private dropSettled(): void {
    while (this.head < this.queue.length && this.queue[this.head]!.done) this.head++;
    this.compact();
  }

  /** Empties a queue whose calls were all dropped, and cuts a long dropped front away. */
  private compact(): void {
    if (this.head === this.queue.length) {
      this.queue.length = 0;
      this.head = 0;
    } else if (this.head >= 1024) {
      this.queue.splice(0, this.head);
      this.head = 0;
    }
  }

  /** Fails the calls whose answer did not come in the grace pass. */
  private expire(expired: readonly Pending[]): void {
    for (const entry of expired) {
      if (entry.done) continue;
      entry.done = true;
      entry.fail(new StoreTimeoutError(this.timeoutMs));
    }
  }

  /** Wakes at `dueAt`; a call not stamped yet arms nothing (its stamp will). */
  private arm(dueAt: number): void {
    if (dueAt === UNSTAMPED) return;
    this.timer = setTimeout(() => this.fire(), Math.max(0, Math.ceil(dueAt - monotonicNow())));
  }

  private fire(): void {
    this.timer = undefined;
    const now = monotonicNow();
    const { queue } = this;
    const expired: Pending[] = [];
    while (this.head < queue.length) {
      const entry = queue[this.head]!;
      if (!entry.done) {
        if (entry.dueAt > now) break;
        expired.push(entry);
      }
      this.head++;
    }
    if (expired.length > 0) afterIoPass(() => this.expire(expired));
    this.compact();
    if (this.head < queue.length) this.arm(queue[this.head]!.dueAt);
  }
}
