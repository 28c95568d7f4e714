import { describe, expect, it } from 'vitest';
import { DeadlineQueue, StoreTimeoutError, withDeadline } from './deadline.js';

const never = () => new Promise<never>(() => {});
const later = <T>(ms: number, value: T) => new Promise<T>((r) => setTimeout(() => r(value), ms));

describe('withDeadline', () => {
  it('settles with the call, or rejects when the deadline passes', async () => {
    expect(await withDeadline(() => Promise.resolve(7), 50)).toBe(7);
    await expect(withDeadline(() => Promise.reject(new Error('boom')), 50)).rejects.toThrow('boom');
    await expect(withDeadline(never, 20)).rejects.toBeInstanceOf(StoreTimeoutError);
    await expect(
      withDeadline(() => {
        throw new Error('sync');
      }, 20),
    ).rejects.toThrow('sync');
  });

  it('gives an answer that came in with the deadline one pass of I/O before timing out', async () => {
    let answer!: (value: string) => void;
    const call = withDeadline(() => new Promise<string>((resolve) => (answer = resolve)), 10);
    setTimeout(() => setImmediate(() => answer('decided')), 10);
    await expect(call).resolves.toBe('decided');
  });
});

describe('DeadlineQueue', () => {
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
    const queue = new DeadlineQueue(10);
    let answer!: (value: string) => void;
    const call = queue.run(() => new Promise<string>((resolve) => (answer = resolve)));
    // Due with the deadline timer, queued after it: it fires right after the deadline, in the
    // same timers pass, and the answer lands in the I/O pass that follows.
    setTimeout(() => setImmediate(() => answer('decided')), 10);
    await expect(call).resolves.toBe('decided');
    // With no answer at all, the call still times out.
    await expect(queue.run(() => new Promise<string>(() => {}))).rejects.toBeInstanceOf(StoreTimeoutError);
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

  it('stays small in a loop that never yields to timers', async () => {
    const queue = new DeadlineQueue(100);
    for (let i = 0; i < 50_000; i++) await queue.run(() => Promise.resolve(i));
    expect(queue.size).toBeLessThanOrEqual(1);
  });
});
