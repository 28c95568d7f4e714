/**
 * Edges of the decide script pinned to exact answers, each on the Redis script (explicit
 * time) and on MemoryStore, its TypeScript twin: floating-point slack of fractional costs,
 * the clamps of `remaining`, and the microsecond slack of the token bucket and GCRA.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisProcess, startRedis } from '../../../../test/support/redis-server.js';
import { type Decide, makePolicy, memoryDecide } from '../algorithms/testing.test-support.js';
import type { Algorithm, CompiledPolicy, StoreEntry } from '../types.js';
import { redisDecide } from './script.test-support.js';

let server: RedisProcess;
let redis: Redis;
let run = 0;
const stores: Record<string, () => Decide> = {
  redis: () => redisDecide(redis),
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

const T0 = 1_764_400_000_000;

/** One entry of a key no other test used. */
function entry(policy: CompiledPolicy, cost: number, key = `edges${++run}:{id}:${policy.name}`): StoreEntry {
  return { key, policy, cost };
}

describe.each(Object.keys(stores))('decide edges on %s', (storeName) => {
  let decide: Decide;
  beforeAll(() => {
    decide = stores[storeName]!();
  });

  it.each<Algorithm>(['fixed-window', 'sliding-window'])(
    '%s admits thirty costs of 0.1 into a limit of 3 and counts whole units through the rounding noise',
    async (algorithm) => {
      // 0.1 summed 20 times is 2.0000000000000004 and 30 times 3.0000000000000013.
      const policy = makePolicy(algorithm, 3, 60_000);
      const e = entry(policy, 0.1);
      const remaining: number[] = [];
      for (let i = 0; i < 30; i++) {
        const [v] = await decide([e], 'consume', T0 + 1);
        expect(v!.allowed).toBe(true);
        remaining.push(v!.remaining);
      }
      expect(remaining[9]).toBe(2); // after 1.0 (0.9999999999999999)
      expect(remaining[19]).toBe(1); // after 2.0 (2.0000000000000004)
      expect(remaining[29]).toBe(0);
      const [denied] = await decide([e], 'consume', T0 + 1);
      expect(denied!.allowed).toBe(false);
      expect(denied!.remaining).toBe(0);
    },
  );

  it('sliding-log: after time goes back over kept expired records, remaining stays at 0, never below', async () => {
    const policy = makePolicy('sliding-log', 3, 1000);
    const e = entry(policy, 1);
    for (const t of [0, 300, 600]) expect((await decide([e], 'consume', T0 + t))[0]!.allowed).toBe(true);
    // The first record has left the window; the charge appends (the expired record is kept).
    expect((await decide([e], 'consume', T0 + 1100))[0]!.allowed).toBe(true);
    // Back before the first record expired: four records in the window, limit 3.
    const [back] = await decide([e], 'peek', T0 + 950);
    expect(back).toMatchObject({ allowed: false, remaining: 0 });
    const [charged] = await decide([e], 'consume', T0 + 950);
    expect(charged).toMatchObject({ allowed: false, remaining: 0 });
  });

  it.each<Algorithm>(['token-bucket', 'gcra'])(
    '%s admits a unit at the microsecond it is due (1000/3 ms per unit)',
    async (algorithm) => {
      const policy = makePolicy(algorithm, 3, 1000);
      const e = entry(policy, 1);
      const [spent] = await decide([entry(policy, 3, e.key)], 'consume', T0);
      expect(spent).toMatchObject({ allowed: true, remaining: 0 });
      expect((await decide([e], 'peek', T0 + 333))[0]!.allowed).toBe(false);
      // 333.333 ms earn 0.999999 of a unit: the microsecond of slack makes it whole.
      const [due] = await decide([e], 'consume', T0 + 333.333);
      expect(due).toMatchObject({ allowed: true, remaining: 0 });
    },
  );

  it('token-bucket caps the slack at half a unit: 1000 units per ms, once spent, deny the next unit at the same instant', async () => {
    const policy = makePolicy('token-bucket', 1000, 1);
    const e = entry(policy, 1);
    expect((await decide([entry(policy, 1000, e.key)], 'consume', T0))[0]!.allowed).toBe(true);
    const [next] = await decide([e], 'consume', T0);
    expect(next).toMatchObject({ allowed: false, remaining: 0 });
    // Exactly the slack still fits (the comparison includes its bound); a little more does not.
    expect((await decide([entry(policy, 0.6, e.key)], 'peek', T0))[0]!.allowed).toBe(false);
    expect((await decide([entry(policy, 0.5, e.key)], 'peek', T0))[0]!.allowed).toBe(true);
  });

  it('gcra is exact at one instant: 1000 units per ms, once spent, nothing more fits at the same instant', async () => {
    const policy = makePolicy('gcra', 1000, 1);
    const e = entry(policy, 1);
    expect((await decide([entry(policy, 1000, e.key)], 'consume', T0))[0]!.allowed).toBe(true);
    const [next] = await decide([e], 'consume', T0);
    expect(next).toMatchObject({ allowed: false, remaining: 0 });
    // At the state's own instant GCRA counts in exact ticks: no slack, not even half a unit.
    expect((await decide([entry(policy, 0.5, e.key)], 'peek', T0))[0]!.allowed).toBe(false);
    expect((await decide([entry(policy, 0.001, e.key)], 'peek', T0))[0]!.allowed).toBe(false);
  });

  it.each<Algorithm>(['token-bucket', 'gcra'])(
    '%s never reports more than the limit, even when the half-unit slack would round a fractional capacity up',
    async (algorithm) => {
      // 2.5 units per 2.5 us: a unit every microsecond, slack capped at 0.5, floor(2.5 + 0.5) = 3.
      const policy = makePolicy(algorithm, 2.5, 0.0025);
      const [fresh] = await decide([entry(policy, 1)], 'peek', T0);
      expect(fresh).toMatchObject({ allowed: true, remaining: 2 });
    },
  );

  it('token-bucket: time going backwards freezes the bucket at the later time (remaining exactly as before)', async () => {
    const policy = makePolicy('token-bucket', 20, 2000); // a unit per 100 ms
    const e = entry(policy, 1);
    expect((await decide([entry(policy, 5, e.key)], 'consume', T0 + 1000))[0]!.remaining).toBe(15);
    const [back] = await decide([e], 'peek', T0);
    expect(back).toMatchObject({ allowed: true, remaining: 15, resetMs: 1500 }); // full at T0 + 1500
    const [charged] = await decide([e], 'consume', T0);
    expect(charged).toMatchObject({ allowed: true, remaining: 14 });
    // Back at the later time: nothing was earned by the step back and forth.
    const [again] = await decide([e], 'peek', T0 + 1000);
    expect(again).toMatchObject({ allowed: true, remaining: 14, resetMs: 600 });
  });

  it('sliding-window: a step back before the window start weighs the previous window fully, no more', async () => {
    const policy = makePolicy('sliding-window', 10, 1000);
    const e = entry(policy, 1);
    expect((await decide([entry(policy, 4, e.key)], 'consume', T0 + 500))[0]!.allowed).toBe(true);
    expect((await decide([entry(policy, 3, e.key)], 'consume', T0 + 1100))[0]!.allowed).toBe(true);
    // Back to the middle of the first window: 4 (previous, weight 1) + 3 (current) = 7.
    const [back] = await decide([e], 'peek', T0 + 500);
    expect(back).toMatchObject({ allowed: true, remaining: 3 });
    // Forward past the end of the current window: the previous window weighs 0.
    const [late] = await decide([e], 'peek', T0 + 2000);
    expect(late).toMatchObject({ allowed: true, remaining: 7 });
  });

  it('sliding-window: a wait to the window end where current + cost rounds above the limit admits', async () => {
    // Current = limit - cost exactly, yet current + cost rounds above limit + EPS (a fractional
    // limit): the window end has no room yet, 2^-10 ms later it has.
    const limit = 105_855_093.45598401;
    const cost = 13_538_273.82860341;
    const policy = makePolicy('sliding-window', limit, 1000);
    const e = entry(policy, cost);
    expect((await decide([entry(policy, 2, e.key)], 'consume', T0 - 500))[0]!.allowed).toBe(true);
    expect((await decide([entry(policy, limit - cost, e.key)], 'consume', T0 + 100))[0]!.allowed).toBe(true);
    const [denied] = await decide([e], 'peek', T0 + 500);
    expect(denied).toMatchObject({ allowed: false, retryAfterMs: 501 }); // 500 + 2^-10, rounded up
    expect((await decide([e], 'peek', T0 + 1000))[0]!.allowed).toBe(false);
    expect((await decide([e], 'peek', T0 + 1001))[0]!.allowed).toBe(true);
  });

  it('sliding-log: units charged after a step back leave no earlier than the newest ones', async () => {
    const policy = makePolicy('sliding-log', 2, 1000);
    const e = entry(policy, 1);
    expect((await decide([e], 'consume', T0 + 500))[0]!.allowed).toBe(true);
    expect((await decide([e], 'consume', T0))[0]).toMatchObject({
      allowed: true,
      remaining: 0,
      resetMs: 1500,
    });
    // Both units stay until T0 + 1500, the end of the newer one's window.
    expect((await decide([e], 'peek', T0 + 1100))[0]).toMatchObject({ allowed: false, remaining: 0 });
    expect((await decide([e], 'peek', T0 + 1500))[0]).toMatchObject({ allowed: true, remaining: 2 });
  });

  it('sliding-log: times round to the nearest microsecond, so a unit leaves exactly a window after it came', async () => {
    const policy = makePolicy('sliding-log', 1, 1000);
    const e = entry(policy, 1);
    const t = 1_000_000;
    expect((await decide([e], 'consume', t + 0.0006))[0]!.allowed).toBe(true); // stamped t + 1 us
    expect((await decide([e], 'peek', t + 1000.0004))[0]!.allowed).toBe(false); // t + 1000000 us: still in
    expect((await decide([e], 'peek', t + 1000.0006))[0]!.allowed).toBe(true); // t + 1000001 us: gone
  });

  it('gcra: once the clock moved, the slack is 2^-10 ms of refill, no more', async () => {
    const policy = makePolicy('gcra', 1, 1024); // one unit per 1024 ms: 2^-10 ms earns 9.5e-7 units
    const e = entry(policy, 1);
    const t = 1_000_000;
    expect((await decide([e], 'consume', t))[0]!.allowed).toBe(true);
    // 0.9 us early: 8.8e-7 units short, inside the slack; 1.5 us early: 1.46e-6 short, outside.
    expect((await decide([e], 'peek', t + 1023.9991))[0]!.allowed).toBe(true);
    expect((await decide([e], 'peek', t + 1023.9985))[0]!.allowed).toBe(false);
    expect((await decide([e], 'peek', t + 1023.99))[0]!.allowed).toBe(false);
  });

  it('token-bucket: a key written under a larger capacity admits no more than the new capacity', async () => {
    const key = `edges${++run}:{id}:resized`;
    const large = makePolicy('token-bucket', 10, 10_000, 'resized');
    const small = makePolicy('token-bucket', 5, 5000, 'resized');
    expect((await decide([entry(large, 1, key)], 'consume', T0))[0]).toMatchObject({
      allowed: true,
      remaining: 9,
    });
    let admitted = 0;
    for (let i = 0; i < 10; i++)
      if ((await decide([entry(small, 1, key)], 'consume', T0))[0]!.allowed) admitted++;
    expect(admitted).toBe(5);
  });
});

describe('decide edges on redis: stored values of another shape', () => {
  it('reads a sliding log whose length is not a header plus whole records as an empty log', async () => {
    const policy = makePolicy('sliding-log', 10, 60_000);
    const e = entry(policy, 1);
    const field = (x: number) => String(x).padStart(16, ' ');
    // A header and one record (3 units at t, a 15-digit time in us), then one stray character:
    // read as records of 32 characters it would hold 35 live units.
    const t = 900_000_000_000;
    await redis.set(e.key, `${field(0)}${field(t * 1000)}${field(3)}5`);
    const [v] = await redisDecide(redis)([e], 'consume', t + 1);
    expect(v).toMatchObject({ allowed: true, remaining: 9 });
  });

  // The window of T0 + 1 for 60 s windows starts at W; T0 + 1 is 19999 ms before its end.
  const W = Math.floor(T0 / 60_000) * 60_000;
  it.each([
    ['this window, as written', `f${W}|3`, 7, 19_999, `f${W}|4`],
    ['this window, its start in exponent form', `f${(W / 1e12).toString()}e12|3`, 7, 19_999, `f${W}|4`],
    ['this window, its start with a fraction of zero', `f${W}.0|3`, 7, 19_999, `f${W}|4`],
    ['this window, a fractional count', `f${W}|2.5`, 7, 19_999, `f${W}|3.5`],
    ['the next window (time went back): kept', `f${W + 60_000}|4`, 6, 79_999, `f${W + 60_000}|5`],
    ['a later start that is no start of these windows', `f${W + 30_000}|4`, 10, 0, `f${W}|1`],
    ['the previous window', `f${W - 60_000}|4`, 10, 0, `f${W}|1`],
    ['three parts', `f${W}|3|1`, 10, 0, `f${W}|1`],
    ['a count that is no number', `f${W}|x`, 10, 0, `f${W}|1`],
    ['no count', `f${W}|`, 10, 0, `f${W}|1`],
    ['no bar', `f${W}`, 10, 0, `f${W}|1`],
    ['another tag', `w${W}|3|0`, 10, 0, `f${W}|1`],
  ])(
    'fixed window reads a state of %s (%s) as remaining %d, resetMs %d',
    async (_, state, remaining, resetMs, written) => {
      const policy = makePolicy('fixed-window', 10, 60_000);
      const e = entry(policy, 1);
      await redis.set(e.key, state);
      const [looked] = await redisDecide(redis)([e], 'peek', T0 + 1);
      expect(looked).toMatchObject({ allowed: true, remaining, resetMs });
      const [charged] = await redisDecide(redis)([e], 'consume', T0 + 1);
      expect(charged).toMatchObject({ allowed: true, remaining: remaining - 1 });
      // Written back as fmt writes it: the window's start and the count.
      expect(await redis.get(e.key)).toBe(written);
    },
  );
});

describe('decide edges on redis: a token bucket refilled exactly to full', () => {
  it('reads it as full (reset 0) where adding the refill falls an ulp short', async () => {
    // 6 tokens, 1100 ms to full: 0.3 tokens at 1000 are full at 2045 ((6 - 0.3) x 1100/6 = 1045
    // exactly), while 0.3 + 1045 / (1100/6) = 5.999999999999999.
    const e = entry(makePolicy('token-bucket', 6, 1100), 1);
    await redis.set(e.key, '0.3|1000');
    expect(await redisDecide(redis)([e], 'peek', 2045)).toEqual([
      { allowed: true, remaining: 6, resetMs: 0, retryAfterMs: 0 },
    ]);
  });
});
