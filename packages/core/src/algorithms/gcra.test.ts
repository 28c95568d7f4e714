/**
 * GCRA is exact: with a frozen clock exactly floor(burst / cost) requests fit at any rate
 * from 1/day to 1e6/s and costs down to 0.001, and after a burst cut the reported wait is
 * the wait. On MemoryStore and the Redis decide script (real redis-server, explicit time).
 */
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisProcess, startRedis } from '../../../../test/support/redis-server.js';
import { redisDecide } from '../redis/script.test-support.js';
import type { StoreVerdict } from '../types.js';
import { type Decide, makePolicy, memoryDecide, startTimeArb } from './testing.test-support.js';

let server: RedisProcess;
let redis: Redis;
let run = 0;
const stores: [string, () => Decide][] = [
  ['MemoryStore', () => memoryDecide().decide],
  ['Redis', () => redisDecide(redis)],
];

beforeAll(async () => {
  server = await startRedis();
  redis = new Redis(server.port, '127.0.0.1', { maxRetriesPerRequest: 1 });
});

afterAll(async () => {
  redis?.disconnect();
  await server?.stop();
});

/** A GCRA policy of `burst` units refilled one per `intervalMs`. */
const gcraPolicy = (burst: number, intervalMs: number) => makePolicy('gcra', burst, burst * intervalMs, 'g');

/** How many of `count` requests of `cost` one key admits at the instant `now`. */
async function admitted(
  decide: Decide,
  key: string,
  burst: number,
  intervalMs: number,
  cost: number,
  count: number,
  now: number,
) {
  const policy = gcraPolicy(burst, intervalMs);
  let n = 0;
  for (let i = 0; i < count; i++) {
    const [v] = (await decide([{ key, policy, cost }], 'consume', now)) as [StoreVerdict];
    if (v.allowed) n++;
  }
  return n;
}

describe.each(stores)('GCRA on %s, frozen clock', (_name, store) => {
  it('burst 100 at 10000/ms admits 100 of 300', async () => {
    expect(await admitted(store(), `gx${++run}`, 100, 1e-4, 1, 300, 1_764_400_000_000.123)).toBe(100);
  });

  it('burst 100 at 100000/s with cost 0.1 admits 1000 of 1100', async () => {
    expect(await admitted(store(), `gx${++run}`, 100, 0.01, 0.1, 1100, 1_764_400_000_000.123)).toBe(1000);
  });

  it('admits exactly floor(burst / cost), rates from 1/day to 1e6/s, costs down to 0.001', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 1000 }),
        // log10 of the interval: 1e6/s (1e-3 ms) to 1/day (8.64e7 ms)
        fc.double({ min: -3, max: Math.log10(86_400_000), noNaN: true }),
        // the cost in thousandths of a unit
        fc.oneof(fc.constantFrom(1, 3, 7, 100, 250, 1000, 3000), fc.integer({ min: 1, max: 5000 })),
        startTimeArb,
        async (burst, logInterval, milli, now) => {
          const intervalMs = 10 ** logInterval;
          const cost = milli / 1000;
          fc.pre(cost <= burst);
          const fit = Math.floor((burst * 1000) / milli);
          const decide = store();
          const key = `gx${++run}`;
          // Most of the burst in one request of `bulk` requests' worth, then one at a time.
          const bulk = Math.max(0, fit - 12);
          if (bulk > 0) {
            const [v] = (await decide(
              [{ key, policy: gcraPolicy(burst, intervalMs), cost: (bulk * milli) / 1000 }],
              'consume',
              now,
            )) as [StoreVerdict];
            expect(v.allowed).toBe(true);
          }
          expect(bulk + (await admitted(decide, key, burst, intervalMs, cost, 24, now))).toBe(fit);
        },
      ),
      { numRuns: 150 },
    );
  }, 60_000);
});

describe.each(stores)('GCRA on %s after a burst cut', (_name, store) => {
  it('100 -> 10 at 10/s with 50 used: the reported wait is the wait', async () => {
    const decide = store();
    const key = `gx${++run}`;
    const t = 1_764_400_000_000;
    const before = gcraPolicy(100, 100);
    const after = gcraPolicy(10, 100);
    await decide([{ key, policy: before, cost: 50 }], 'consume', t);
    const [denied] = (await decide([{ key, policy: after, cost: 1 }], 'consume', t + 1)) as [StoreVerdict];
    expect(denied.allowed).toBe(false);
    // What is over the new burst is forgiven: one unit's wait, not forty.
    expect(denied.retryAfterMs).toBeLessThanOrEqual(101);
    const [then] = (await decide(
      [{ key, policy: after, cost: 1 }],
      'consume',
      t + 1 + denied.retryAfterMs,
    )) as [StoreVerdict];
    expect(then.allowed).toBe(true);
  });
});
