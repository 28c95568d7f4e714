/**
 * GCRA's tick arithmetic pinned to exact answers, on the Redis script (explicit time) and on
 * MemoryStore: the tick size a limit gets (10^k ticks per unit, limit x ticks <= 2^40), costs
 * rounded up to whole ticks and never to none, the slack's boundary once the clock moved, and
 * the exact decimal the script stores (lua/gcra.lua, algorithms/gcra.ts); and the cap on every
 * TTL the decide script sets.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisProcess, startRedis } from '../../../../test/support/redis-server.js';
import { type Decide, makePolicy, memoryDecide } from '../algorithms/testing.test-support.js';
import type { CompiledPolicy, StoreEntry } from '../types.js';
import { redisDecide } from './script.test-support.js';

let server: RedisProcess;
let redis: Redis;
let run = 0;
const stores: Record<string, () => Decide> = {
  redis: () => redisDecide(redis),
  'redis (full form)': () => redisDecide(redis, 'full'),
  memory: () => memoryDecide().decide,
};

beforeAll(async () => {
  server = await startRedis();
  redis = new Redis(server.port, '127.0.0.1', { maxRetriesPerRequest: 1 });
});

afterAll(async () => {
  redis?.disconnect();
  await server?.stop();
});

/** Between 2^40 and 2^41 ms: its doubles are 2^-12 ms apart, so T0 + 2^-12 is exact. */
const T0 = 1_764_400_000_000;

function entry(policy: CompiledPolicy, cost: number): StoreEntry {
  return { key: `gcra-edges${++run}:{id}:${policy.name}`, policy, cost };
}

describe.each(Object.keys(stores))('gcra ticks on %s', (storeName) => {
  let decide: Decide;
  beforeAll(() => {
    decide = stores[storeName]!();
  });

  it('a limit of 1e6 counts in 1e-6 units (1e6 ticks per unit, 1e12 <= 2^40): a cost of 1e-7 is charged as 1e-6', async () => {
    const policy = makePolicy('gcra', 1_000_000, 1_000_000);
    const spend = entry(policy, 999_999.999_999_5);
    const [first] = await decide([spend], 'consume', T0);
    expect(first).toMatchObject({ allowed: true, remaining: 0 });
    // Half a tick was left; at 1e9 ticks per unit (limit x ticks 1e15) 1e-7 would still fit.
    const [tiny] = await decide([{ ...spend, cost: 1e-7 }], 'consume', T0);
    expect(tiny!.allowed).toBe(false);
  });

  it('a cost of 1/3 at 10 per second: exactly 30 fit at one instant (its ticks, rounded up, are not summed as more)', async () => {
    const e = entry(makePolicy('gcra', 10, 1000), 1 / 3);
    let admitted = 0;
    for (let i = 0; i < 31; i++) if ((await decide([e], 'consume', T0))[0]!.allowed) admitted++;
    expect(admitted).toBe(30);
  });

  it('a cost of 1/3 at 10 per hour: exactly 30 fit at one instant, whatever the rate', async () => {
    const e = entry(makePolicy('gcra', 10, 3_600_000), 1 / 3);
    let admitted = 0;
    for (let i = 0; i < 31; i++) if ((await decide([e], 'consume', T0))[0]!.allowed) admitted++;
    expect(admitted).toBe(30);
  });

  it('a cost is rounded up to whole ticks: two costs of 1.0000000005 do not fit a burst of 2', async () => {
    const e = entry(makePolicy('gcra', 2, 2000), 1.000_000_000_5);
    expect((await decide([e], 'consume', T0))[0]!.allowed).toBe(true);
    // 0.999999999 units are left: a second 1.0000000005 (1000000001 ticks) does not fit.
    const [second] = await decide([e], 'consume', T0);
    expect(second!.allowed).toBe(false);
  });

  it('a cost far below one tick is charged one tick, never none', async () => {
    const e = entry(makePolicy('gcra', 1, 1000), 1);
    expect((await decide([e], 'consume', T0))[0]!.allowed).toBe(true);
    const [dust] = await decide([{ ...e, cost: 1e-13 }], 'consume', T0);
    expect(dust!.allowed).toBe(false);
    expect(dust!.retryAfterMs).toBe(1); // 1e-9 units (one tick) at 1000 ms per unit, rounded up
  });

  it('once the clock moved, a cost that meets the limit plus the half-unit slack exactly is admitted', async () => {
    // 2^-11 ms per unit: 2^-10 ms of refill is two units, so the slack is capped at 0.5.
    const policy = makePolicy('gcra', 4, 2 ** -9);
    const e = entry(policy, 4);
    expect((await decide([e], 'consume', T0))[0]!.allowed).toBe(true);
    // 2^-12 ms later 0.5 units drained: 3.5 owed, and 3.5 + 1 = 4 + 0.5 exactly.
    const [due] = await decide([{ ...e, cost: 1 }], 'consume', T0 + 2 ** -12);
    expect(due!.allowed).toBe(true);
    const [over] = await decide([{ ...e, cost: 1e-6 }], 'peek', T0 + 2 ** -12);
    expect(over!.allowed).toBe(false);
  });
});

describe('gcra state on Redis', () => {
  it('stores the units owed at one instant as their exact decimal: g0.1|<tsMs>', async () => {
    const e = entry(makePolicy('gcra', 10, 10_000), 0.1);
    expect((await redisDecide(redis)([e], 'consume', T0))[0]!.allowed).toBe(true);
    expect(await redis.get(e.key)).toBe(`g0.1|${T0}`);
    expect((await redisDecide(redis)([e], 'consume', T0))[0]!.allowed).toBe(true);
    expect(await redis.get(e.key)).toBe(`g0.2|${T0}`);
  });

  it('charges a state drained exactly to nothing as a fresh key: g1|<nowMs>, not a moved clock', async () => {
    // 1000 ms per unit: 1 unit owed at T0 has drained to exactly 0 at T0 + 1000.
    const e = entry(makePolicy('gcra', 10, 10_000), 1);
    expect((await redisDecide(redis)([e], 'consume', T0))[0]!.allowed).toBe(true);
    expect(await redis.get(e.key)).toBe(`g1|${T0}`);
    const [v] = await redisDecide(redis)([e], 'consume', T0 + 1000);
    expect(v).toMatchObject({ allowed: true, remaining: 9, resetMs: 1000 });
    expect(await redis.get(e.key)).toBe(`g1|${T0 + 1000}`);
  });
});

describe('decide script TTLs on Redis', () => {
  it('caps a TTL at 1e15 ms: a bucket that takes 1e20 ms to refill is still written', async () => {
    // Without the cap the script would send SET ... PX 1e+20, which Redis refuses.
    const e = entry(makePolicy('token-bucket', 10, 1e20), 10);
    const [v] = await redisDecide(redis)([e], 'consume', T0);
    expect(v).toMatchObject({ allowed: true, remaining: 0 });
    const pttl = await redis.pttl(e.key);
    expect(pttl).toBeGreaterThan(1e15 - 60_000);
    expect(pttl).toBeLessThanOrEqual(1e15);
  });
});
