/** A deadline on every store call. */

import { STORE_TIMEOUT_ERROR_BRAND } from '../error-brands.js';
import { monotonicNow } from '../monotonic.js';

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
    const { queue } = this;
    while (this.head < queue.length && queue[this.head]!.done) this.head++;
    if (this.head === queue.length) {
      queue.length = 0;
      this.head = 0;
    } else if (this.head >= 1024) {
      queue.splice(0, this.head);
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
    if (this.head === queue.length) {
      queue.length = 0;
      this.head = 0;
      return;
    }
    if (this.head >= 1024) {
      queue.splice(0, this.head);
      this.head = 0;
    }
    this.arm(queue[this.head]!.dueAt);
  }
}
