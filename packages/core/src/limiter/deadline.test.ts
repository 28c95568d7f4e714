import { describe, expect, it, vi } from 'vitest';
import { callWithDeadline, DeadlineQueue, StoreTimeoutError } from './store-call.js';

const never = () => new Promise<never>(() => {});
const later = <T>(ms: number, value: T) => new Promise<T>((r) => setTimeout(() => r(value), ms));
/** The value or the error a promise settles with (so a rejection is never left unhandled). */
const settle = <T>(p: Promise<T>) =>
  p.then(
    (v) => v as T | unknown,
    (e: unknown) => e,
  );

/** Runs `body` on fake timers and a fake monotonic clock (`performance.now`), deterministic order. */
async function withFakeTimers(body: () => Promise<void>): Promise<void> {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'performance'] });
  try {
    await body();
  } finally {
    vi.useRealTimers();
  }
}

describe('callWithDeadline', () => {
  it('settles with the call, or rejects when the deadline passes', async () => {
    expect(await callWithDeadline(() => Promise.resolve(7), 50)).toBe(7);
    await expect(callWithDeadline(() => Promise.reject(new Error('boom')), 50)).rejects.toThrow('boom');
    await expect(callWithDeadline(never, 20)).rejects.toBeInstanceOf(StoreTimeoutError);
    await expect(
      callWithDeadline(() => {
        throw new Error('sync');
      }, 20),
    ).rejects.toThrow('sync');
  });

  it('gives an answer that came in with the deadline one pass of I/O before timing out', async () => {
    await withFakeTimers(async () => {
      let answer!: (value: string) => void;
      const call = settle(callWithDeadline(() => new Promise<string>((resolve) => (answer = resolve)), 10));
      // The deadline's timer fires; the expiry waits for one more pass (a 0 ms timer), and
      // the answer comes in before it, as one read in that pass would bring it.
      vi.advanceTimersToNextTimer();
      answer('decided');
      await vi.runAllTimersAsync();
      expect(await call).toBe('decided');
      // With no answer at all, the call still times out.
      const none = settle(callWithDeadline(never, 10));
      await vi.runAllTimersAsync();
      expect(await none).toBeInstanceOf(StoreTimeoutError);
    });
  });
});

describe('DeadlineQueue', () => {
  it('re-arms for a later call once the first has expired, so each times out at its own deadline', async () => {
    await withFakeTimers(async () => {
      const queue = new DeadlineQueue(100);
      const first = settle(queue.run(never));
      await vi.advanceTimersByTimeAsync(50);
      let secondDone = false;
      const second = settle(queue.run(never)).then((v) => {
        secondDone = true;
        return v;
      });
      // The first expires at 100 ms (plus its grace pass); the second is not due until 150 ms.
      await vi.advanceTimersByTimeAsync(60);
      expect(await first).toBeInstanceOf(StoreTimeoutError);
      expect(secondDone).toBe(false);
      await vi.advanceTimersByTimeAsync(50);
      expect(await second).toBeInstanceOf(StoreTimeoutError);
    });
  });

  it('rejects every call that outlives the deadline, on time, and lets the others through', async () => {
    const queue = new DeadlineQueue(40);
    const started = performance.now();
    const outcomes = await Promise.allSettled([
      queue.run(never),
      queue.run(() => later(5, 'fast')),
      queue.run(never),
      queue.run(() => later(100, 'slow')),
      queue.run(() => Promise.reject(new Error('boom'))),
    ]);
    const elapsed = performance.now() - started;
    expect(outcomes.map((o) => (o.status === 'fulfilled' ? o.value : (o.reason as Error).name))).toEqual([
      'StoreTimeoutError',
      'fast',
      'StoreTimeoutError',
      'StoreTimeoutError',
      'Error',
    ]);
    expect(elapsed).toBeGreaterThanOrEqual(38);
    expect(elapsed).toBeLessThan(1000);
  });

  it('gives an answer that came in with the deadline one pass of I/O before timing out', async () => {
    await withFakeTimers(async () => {
      const queue = new DeadlineQueue(10);
      let answer!: (value: string) => void;
      const call = settle(queue.run(() => new Promise<string>((resolve) => (answer = resolve))));
      // The queue's timer fires at the deadline; the expiry waits for one more pass, and the
      // answer comes in before it.
      vi.advanceTimersToNextTimer();
      answer('decided');
      await vi.runAllTimersAsync();
      expect(await call).toBe('decided');
      // With no answer at all, the call still times out.
      const none = settle(queue.run(never));
      await vi.runAllTimersAsync();
      expect(await none).toBeInstanceOf(StoreTimeoutError);
    });
  });

  it('calls started later get their own full deadline', async () => {
    const queue = new DeadlineQueue(60);
    const first = queue.run(never).catch((e: unknown) => e);
    await later(40, undefined);
    const started = performance.now();
    const second = queue.run(() => later(40, 'in time'));
    expect(await first).toBeInstanceOf(StoreTimeoutError);
    expect(await second).toBe('in time');
    const third = queue.run(never).catch((e: unknown) => e);
    expect(await third).toBeInstanceOf(StoreTimeoutError);
    expect(performance.now() - started).toBeGreaterThanOrEqual(58);
  });

  it('run settles with the answer, and rejects with every failure (throw, rejection, deadline)', async () => {
    const queue = new DeadlineQueue(30);
    const failures: unknown[] = [];
    const onFailure = (error: unknown): number | string => {
      failures.push(error);
      return 'failed';
    };
    const double = (n: number): number | string => n * 2;
    const answers = await Promise.all([
      queue.run(() => later(1, 21)).then(double, onFailure),
      queue.run(() => Promise.reject(new Error('boom'))).then(double, onFailure),
      queue
        .run<number>(() => {
          throw new Error('thrown');
        })
        .then(double, onFailure),
      queue.run<number>(never).then(double, onFailure),
    ]);
    expect(answers).toEqual([42, 'failed', 'failed', 'failed']);
    expect(failures.map((e) => (e as Error).message)).toEqual([
      'thrown',
      'boom',
      'store did not answer within 30 ms',
    ]);
    expect(failures[2]).toBeInstanceOf(StoreTimeoutError);
  });

  it("a handler of the answer that throws rejects, and never becomes the call's failure", async () => {
    const queue = new DeadlineQueue(30);
    const outcomes = await Promise.allSettled([
      queue
        .run(() => Promise.resolve(1))
        .then(
          () => {
            throw new Error('in onValue');
          },
          () => 0,
        ),
      queue
        .run(() => Promise.reject(new Error('store')))
        .then(
          () => 1,
          () => {
            throw new Error('in onFailure');
          },
        ),
    ]);
    expect(outcomes.map((o) => (o.status === 'rejected' ? (o.reason as Error).message : o.value))).toEqual([
      'in onValue',
      'in onFailure',
    ]);
  });

  it('hands a late answer (never one in time, nor a late failure) to its late handler, with its context', async () => {
    await withFakeTimers(async () => {
      const queue = new DeadlineQueue(10);
      const handed: string[] = [];
      const late = (value: number, context: string): void => {
        handed.push(`${context}: ${value}`);
        if (value === 2) throw new Error('a throw in the handler is dropped');
      };
      const answers: ((value: number) => void)[] = [];
      let failLate!: (error: Error) => void;
      const calls = [
        queue.run(() => new Promise<number>((resolve) => answers.push(resolve)), late, 'late one'),
        queue.run(() => new Promise<number>((resolve) => answers.push(resolve)), late, 'late two'),
        queue.run(() => new Promise<number>((_, reject) => (failLate = reject)), late, 'failing'),
        queue.run(() => Promise.resolve(4), late, 'in time'),
      ].map((call) => call.catch((error: Error) => error.message));
      await vi.runAllTimersAsync();
      answers[0]?.(1);
      answers[1]?.(2);
      failLate(new Error('too late'));
      await vi.runAllTimersAsync();
      expect(await Promise.all(calls)).toEqual([
        'store did not answer within 10 ms',
        'store did not answer within 10 ms',
        'store did not answer within 10 ms',
        4,
      ]);
      expect(handed).toEqual(['late one: 1', 'late two: 2']);
    });
  });

  it('settles each call once: a late answer or failure is dropped, an answer in the grace pass wins', async () => {
    await withFakeTimers(async () => {
      const queue = new DeadlineQueue(10);
      const seen: string[] = [];
      const track = (name: string) =>
        [
          (value: number) => seen.push(`${name}: value ${value}`),
          (error: unknown) => seen.push(`${name}: failure ${(error as Error).message}`),
        ] as const;
      let answerLate!: (value: number) => void;
      let failLate!: (error: Error) => void;
      let answerInGrace!: (value: number) => void;
      const late = queue
        .run(() => new Promise<number>((resolve) => (answerLate = resolve)))
        .then(...track('late'));
      const failing = queue
        .run(() => new Promise<number>((_, reject) => (failLate = reject)))
        .then(...track('failing'));
      const inGrace = queue
        .run(() => new Promise<number>((resolve) => (answerInGrace = resolve)))
        .then(...track('in grace'));
      // The deadline's timer fires; the answer of one call comes in before the grace pass ends.
      vi.advanceTimersToNextTimer();
      answerInGrace(3);
      await vi.runAllTimersAsync();
      answerLate(1);
      failLate(new Error('too late'));
      await vi.runAllTimersAsync();
      await Promise.all([late, failing, inGrace]);
      expect(seen.sort()).toEqual([
        'failing: failure store did not answer within 10 ms',
        'in grace: value 3',
        'late: failure store did not answer within 10 ms',
      ]);
    });
  });

  it('expires a call at its deadline plus exactly one grace pass, not a pass later', async () => {
    await withFakeTimers(async () => {
      const queue = new DeadlineQueue(10);
      let answer!: (value: string) => void;
      const call = settle(queue.run(() => new Promise<string>((resolve) => (answer = resolve))));
      vi.advanceTimersToNextTimer(); // the loop's next turn: the call's clock starts
      vi.advanceTimersToNextTimer(); // the deadline: the call is due now
      vi.advanceTimersToNextTimer(); // the grace pass: it expires
      answer('too late');
      await vi.runAllTimersAsync();
      expect(await call).toBeInstanceOf(StoreTimeoutError);
    });
  });

  it('counts the calls it holds: pending, or settled behind a pending one', async () => {
    const queue = new DeadlineQueue(60_000);
    const first = queue.run(() => Promise.resolve(1));
    void queue.run(never).catch(() => {});
    expect(queue.size).toBe(2);
    await first;
    void queue.run(never).catch(() => {});
    // The settled first call was dropped from the front: two pending calls remain.
    expect(queue.size).toBe(2);
  });

  it('stays small in a loop that never yields to timers', async () => {
    const queue = new DeadlineQueue(100);
    for (let i = 0; i < 50_000; i++) await queue.run(() => Promise.resolve(i));
    expect(queue.size).toBeLessThanOrEqual(1);
  });
});
