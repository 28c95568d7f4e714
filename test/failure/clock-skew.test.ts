/**
 * One node's clock is minutes off (its limiter runs on a skewed clock, as a host with a
 * drifting clock would), the other's is right. Decisions are the same as if both were right,
 * because the scripts read Redis TIME: one shared count, the same reset times.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type Algorithm, createLimiter, RedisStore } from '../cluster/core.js';
import { type RedisProcess, startRedis } from '../support/redis-server.js';

const SKEW_MS = 7 * 60_000;

let redis: RedisProcess;
let client: Redis;

beforeAll(async () => {
  redis = await startRedis();
  client = new Redis({ host: '127.0.0.1', port: redis.port });
});
afterAll(async () => {
  vi.useRealTimers();
  client?.disconnect();
  await redis?.stop();
});

/** Fixed windows follow Redis time; keep a short run clear of a window boundary. */
async function clearOfWindowBoundary(windowSeconds: number): Promise<void> {
  const [seconds] = (await client.call('TIME')) as [string, string];
  const left = windowSeconds - (Number(seconds) % windowSeconds);
  if (left < 5) await new Promise((r) => setTimeout(r, (left + 1) * 1000));
}

const ALGORITHMS: readonly Algorithm[] = [
  'token-bucket',
  'gcra',
  'sliding-window',
  'fixed-window',
  'sliding-log',
];

describe.each(ALGORITHMS)('%s: one node 7 minutes ahead, one 7 minutes behind', (algorithm) => {
  it('two nodes, one skewed, share one count and agree on reset times', async () => {
    await clearOfWindowBoundary(60);

    const policies = [{ name: 'skew', algorithm, limit: 10, window: '1m' }];
    const prefix = `skew-${algorithm}`;
    const store = new RedisStore({ client });
    const right = createLimiter({ policies, prefix, store, timeoutMs: 2000 });
    const ahead = createLimiter({
      policies,
      prefix,
      store,
      timeoutMs: 2000,
      clock: () => Date.now() + SKEW_MS,
    });
    const behind = createLimiter({
      policies,
      prefix,
      store,
      timeoutMs: 2000,
      clock: () => Date.now() - SKEW_MS,
    });
    const nodes = [right, ahead, behind];

    const skewedRun = [];
    for (let i = 0; i < 15; i++) skewedRun.push(await nodes[i % 3]!.check({ identity: 'tenant' }));
    // The same sequence on right clocks only, for another identity: the baseline.
    const baseline = [];
    for (let i = 0; i < 15; i++) baseline.push(await right.check({ identity: 'baseline' }));

    // One shared count: exactly 10 admitted, remaining counting down across nodes.
    expect(skewedRun.map((d) => d.allowed)).toEqual([...Array(10).fill(true), ...Array(5).fill(false)]);
    expect(skewedRun.slice(0, 10).map((d) => d.remaining)).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
    // Decisions unchanged: the same as on right clocks, reset and retry times within the run's own duration.
    for (let i = 0; i < 15; i++) {
      const a = skewedRun[i]!;
      const b = baseline[i]!;
      expect([a.allowed, a.outcome, a.remaining]).toEqual([b.allowed, b.outcome, b.remaining]);
      expect(Math.abs(a.resetMs - b.resetMs)).toBeLessThan(2000);
      expect(Math.abs(a.retryAfterMs - b.retryAfterMs)).toBeLessThan(2000);
    }
  });
});

describe('a whole process minutes behind (faked Date)', () => {
  it('a limiter built under a skewed system clock decides like one on the right clock', async () => {
    await clearOfWindowBoundary(3600);
    const store = new RedisStore({ client });
    const policies = [{ name: 'skew', algorithm: 'fixed-window' as const, limit: 5, window: '1h' }];
    const right = createLimiter({ policies, prefix: 'skew-process', store, timeoutMs: 2000 });
    const first = await right.check({ identity: 'tenant' });
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() - SKEW_MS);
    try {
      const skewed = createLimiter({ policies, prefix: 'skew-process', store, timeoutMs: 2000 });
      const rest = [];
      for (let i = 0; i < 5; i++) rest.push(await skewed.check({ identity: 'tenant' }));
      expect([first, ...rest].map((d) => d.allowed)).toEqual([true, true, true, true, true, false]);
      expect(Math.abs(rest[0]!.resetMs - first.resetMs)).toBeLessThan(5000);
    } finally {
      vi.useRealTimers();
    }
  });
});
