import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisProcess, startRedis } from '../../../../test/support/redis-server.js';
import { ALL_ALGORITHMS, makePolicy, policyArb, startTimeArb } from '../algorithms/testing.test-support.js';
import { SETTLE_SCRIPT } from '../redis/settle-script.js';
import type { Algorithm, CompiledPolicy, StoreEntry, StoreSettleEntry, StoreVerdict } from '../types.js';
import { RedisStore } from './redis-store.js';
import {
  type Admitted,
  type ClockedStore,
  memorySettleSide,
  redisSettleSide,
  runSettleOps,
  type SettleSide,
  settleOpsArb,
  withinPolicy,
} from './settle.test-support.js';

/**
 * Time a fast-check property of this file may take: its runs take 1-3 s on a quiet 2-core machine
 * and several times that in a full parallel run, past the 5 s default.
 */
const PROPERTY_TIMEOUT_MS = 60_000;

let server: RedisProcess;
let redis: Redis;
let run = 0;
/** A key prefix no other run used. */
const fresh = (): string => `s${++run}`;

beforeAll(async () => {
  server = await startRedis();
  redis = new Redis(server.port, '127.0.0.1', { maxRetriesPerRequest: 1 });
});

afterAll(async () => {
  redis?.disconnect();
  await server?.stop();
});

const memorySide = memorySettleSide;
const redisSide = (): SettleSide => redisSettleSide(redis);

const SIDES = [
  ['MemoryStore', memorySide],
  ['RedisStore', redisSide],
] as const;

/** A window boundary (ms since the epoch): a multiple of every window used below. */
const T0 = 1_764_400_200_000;

describe('MemoryStore and the settle script settle identically', () => {
  it.each(ALL_ALGORITHMS)(
    '%s: over random histories of reservations and settles, time going both ways (differential)',
    async (algorithm) => {
      await fc.assert(
        fc.asyncProperty(
          policyArb(algorithm, true).chain((p) =>
            fc.tuple(fc.constant(p), settleOpsArb(p, true), startTimeArb),
          ),
          async ([policy, ops, t0]) => {
            const [memory, script] = await runSettleOps(
              [memorySide(), redisSide()],
              policy,
              ops,
              t0,
              fresh(),
            );
            expect(script).toEqual(memory);
          },
        ),
        { numRuns: 40 },
      );
    },
    PROPERTY_TIMEOUT_MS,
  );
});

describe.each(SIDES)('settle on %s', (_name, makeSide) => {
  const entryOf = (key: string, policy: CompiledPolicy, cost: number): StoreEntry => ({ key, policy, cost });
  const settleOf = (e: StoreEntry, actualUnits: number, reservedAgoMs = 0): StoreSettleEntry => ({
    key: e.key,
    policy: e.policy,
    reservedUnits: e.cost,
    actualUnits,
    reservedAgoMs,
  });
  const peek = async (side: ClockedStore, e: StoreEntry, cost = 1) =>
    ((await side.store.decide([{ ...e, cost }], 'peek')) as [StoreVerdict])[0];

  it('refunds at most what was reserved and never above the capacity', async () => {
    const side = makeSide();
    const policy = makePolicy('token-bucket', 10, 1000); // 1 token / 100 ms
    const e = entryOf(`${fresh()}:{a}:tb`, policy, 4);
    side.at(T0);
    expect((await side.store.decide([e], 'consume'))[0]?.remaining).toBe(6);
    expect(await side.store.settle([settleOf(e, 1)])).toEqual([true]);
    expect((await peek(side, e)).remaining).toBe(9);
    // 500 ms later the bucket refilled to 10 - 4 + 5 = 11 -> 10 without the refund: nothing to give.
    const e2 = entryOf(`${fresh()}:{a}:tb`, policy, 4);
    await side.store.decide([e2], 'consume');
    side.at(T0 + 300);
    expect(await side.store.settle([settleOf(e2, 0, 300)])).toEqual([true]);
    expect((await peek(side, e2)).remaining).toBe(10);
    expect((await peek(side, e2, 10)).allowed).toBe(true);
    expect((await peek(side, e2, 10.5)).allowed).toBe(false);
  });

  it('charges a settle above the reservation in full, in debt: later checks wait until it is repaid', async () => {
    const side = makeSide();
    for (const algorithm of ['token-bucket', 'gcra'] as const) {
      const policy = makePolicy(algorithm, 10, 1000); // 1 unit / 100 ms
      const e = entryOf(`${fresh()}:{b}:${algorithm}`, policy, 10);
      side.at(T0);
      expect((await side.store.decide([e], 'consume'))[0]?.remaining).toBe(0);
      expect(await side.store.settle([settleOf(e, 15)])).toEqual([true]);
      // 5 units of debt, then 1 unit to earn: 600 ms.
      expect(await peek(side, e)).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 600 });
      side.at(T0 + 599);
      expect((await peek(side, e)).allowed).toBe(false);
      side.at(T0 + 600);
      expect((await peek(side, e)).allowed).toBe(true);
    }
  });

  it('drops a charge settled once the bucket has refilled completely (the key as good as expired)', async () => {
    const side = makeSide();
    const policy = makePolicy('token-bucket', 1, 1000); // 1 unit / s
    const e = entryOf(`${fresh()}:{f}:tb`, policy, 0.02);
    side.at(T0);
    await side.store.decide([e], 'consume');
    // 20 ms earned the 0.02 back: full again, so the 0.02 more that was used is not charged.
    side.at(T0 + 20);
    expect(await side.store.settle([settleOf(e, 0.04, 20)])).toEqual([false]);
    expect((await peek(side, e, 1)).allowed).toBe(true);
    // 19 ms after a check the bucket is 0.001 short of full: the charge is made.
    const e2 = entryOf(`${fresh()}:{f}:tb`, policy, 0.02);
    side.at(T0);
    await side.store.decide([e2], 'consume');
    side.at(T0 + 19);
    expect(await side.store.settle([settleOf(e2, 0.04, 19)])).toEqual([true]);
    expect((await peek(side, e2, 1)).allowed).toBe(false);
  });

  it('caps the debt at one limit', async () => {
    const side = makeSide();
    for (const algorithm of ALL_ALGORITHMS) {
      const policy = makePolicy(algorithm, 10, 1000);
      const e = entryOf(`${fresh()}:{c}:${algorithm}`, policy, 10);
      side.at(T0 + 100);
      await side.store.decide([e], 'consume');
      expect(await side.store.settle([settleOf(e, 1000)])).toEqual([true]);
      const v = await peek(side, e);
      expect(v.allowed).toBe(false);
      // Token bucket and GCRA: 10 units of debt + 1 to earn; the windows wait for their end at most.
      expect(v.retryAfterMs).toBeLessThanOrEqual(algorithm === 'sliding-window' ? 2000 : 1100);
      if (algorithm === 'token-bucket' || algorithm === 'gcra') expect(v.retryAfterMs).toBe(1100);
    }
  });

  it('leaves a key that no longer exists alone: a refund never recreates it', async () => {
    const side = makeSide();
    for (const algorithm of ALL_ALGORITHMS) {
      const policy = makePolicy(algorithm, 10, 1000);
      const e = entryOf(`${fresh()}:{d}:${algorithm}`, policy, 3);
      side.at(T0 + 10);
      await side.store.decide([e], 'consume');
      await side.store.reset([e.key]);
      expect(await side.store.settle([settleOf(e, 0), settleOf({ ...e, key: `${e.key}:x` }, 9)])).toEqual([
        false,
        false,
      ]);
      if (side.store instanceof RedisStore) expect(await redis.exists(e.key, `${e.key}:x`)).toBe(0);
      expect((await peek(side, e)).remaining).toBe(10);
    }
  });

  it('settles a state as good as expired (full again, or its windows over) as a no-op', async () => {
    const side = makeSide();
    for (const algorithm of ALL_ALGORITHMS) {
      const policy = makePolicy(algorithm, 10, 1000);
      const e = entryOf(`${fresh()}:{e}:${algorithm}`, policy, 3);
      side.at(T0 + 10);
      await side.store.decide([e], 'consume');
      side.at(T0 + 10 + 2000);
      expect(await side.store.settle([settleOf(e, 10, 2000)])).toEqual([false]);
      expect((await peek(side, e)).remaining).toBe(10);
    }
  });

  it("settles a fixed window's reservation in its own window only", async () => {
    const side = makeSide();
    const policy = makePolicy('fixed-window', 5, 1000);
    const e = entryOf(`${fresh()}:{f}:fw`, policy, 3);
    side.at(T0 + 900);
    await side.store.decide([e], 'consume');
    side.at(T0 + 950);
    expect(await side.store.settle([settleOf(e, 1, 50)])).toEqual([true]);
    expect((await peek(side, e)).remaining).toBe(4);
    // Reserved at T0 + 990, the next window begins, a check there; the settle is for the old window.
    side.at(T0 + 990);
    await side.store.decide([e], 'consume');
    side.at(T0 + 1100);
    await side.store.decide([{ ...e, cost: 2 }], 'consume');
    expect(await side.store.settle([settleOf(e, 0, 110)])).toEqual([false]);
    expect((await peek(side, e)).remaining).toBe(3);
  });

  it("never takes a fixed window's count below 0: a refund of units a reset forgot leaves an empty window", async () => {
    const side = makeSide();
    const policy = makePolicy('fixed-window', 5, 1000);
    const e = entryOf(`${fresh()}:{f}:fw`, policy, 3);
    side.at(T0 + 100);
    await side.store.decide([e], 'consume');
    await side.store.reset([e.key]);
    // The same window counts 1 since the reset; the refund of the 3 reserved before it stops at 0.
    side.at(T0 + 200);
    await side.store.decide([{ ...e, cost: 1 }], 'consume');
    expect(await side.store.settle([settleOf(e, 0, 100)])).toEqual([true]);
    expect((await peek(side, e)).remaining).toBe(5);
    // Counted from 0, not from -2: a full window admits exactly the limit.
    expect((await side.store.decide([{ ...e, cost: 5 }], 'consume'))[0]).toMatchObject({
      allowed: true,
      remaining: 0,
    });
    expect(await peek(side, e)).toMatchObject({ allowed: false, remaining: 0 });
  });

  it("settles a sliding window's reservation in the count of its window, current or previous", async () => {
    const side = makeSide();
    const policy = makePolicy('sliding-window', 10, 1000);
    const e = entryOf(`${fresh()}:{g}:sw`, policy, 4);
    side.at(T0 + 500);
    await side.store.decide([e], 'consume');
    // The next window: a check moves the state on; the reservation's 4 are its previous count.
    side.at(T0 + 1500);
    await side.store.decide([{ ...e, cost: 2 }], 'consume');
    // previous 4 x 0.5 + 2 = 4 -> 6 remaining
    expect((await peek(side, e)).remaining).toBe(6);
    expect(await side.store.settle([settleOf(e, 0, 1000)])).toEqual([true]);
    // previous 0: 10 - 2 = 8
    expect((await peek(side, e)).remaining).toBe(8);
  });

  it('takes a refund off the sliding log records of the reservation, and logs a charge as new units', async () => {
    const side = makeSide();
    const policy = makePolicy('sliding-log', 10, 1000);
    const e = entryOf(`${fresh()}:{h}:sl`, policy, 2);
    side.at(T0 + 100);
    await side.store.decide([e], 'consume');
    side.at(T0 + 200);
    await side.store.decide([{ ...e, cost: 5 }], 'consume');
    side.at(T0 + 300);
    // Reserved 5 at T0 + 200, used 1: the 4 come off that record, not the one at T0 + 100.
    expect(await side.store.settle([settleOf({ ...e, cost: 5 }, 1, 100)])).toEqual([true]);
    expect((await peek(side, e)).remaining).toBe(7);
    side.at(T0 + 1150);
    // The record at T0 + 100 left the window: 1 unit left, from T0 + 200.
    expect((await peek(side, e)).remaining).toBe(9);
    // A charge of 3 more units at T0 + 1150, reserved at T0 + 200: new units, logged now.
    expect(await side.store.settle([settleOf({ ...e, cost: 1 }, 4, 950)])).toEqual([true]);
    expect((await peek(side, e)).remaining).toBe(6);
    side.at(T0 + 1250);
    expect((await peek(side, e)).remaining).toBe(7);
    side.at(T0 + 2150);
    expect((await peek(side, e)).remaining).toBe(10);
  });

  it('logs a sliding log charge at the nearest microsecond of a time between two', async () => {
    const side = makeSide();
    const policy = makePolicy('sliding-log', 10, 1000);
    const e = entryOf(`${fresh()}:{h}:sl`, policy, 2);
    side.at(T0 + 100);
    await side.store.decide([e], 'consume');
    // 3/4096 ms (0.73 us) past T0 + 200: the 3 units charged are logged at T0 + 200.001.
    side.at(T0 + 200 + 3 / 4096);
    expect(await side.store.settle([settleOf(e, 5, 100)])).toEqual([true]);
    side.at(T0 + 1200);
    expect((await peek(side, e)).remaining).toBe(7);
    side.at(T0 + 1200.001);
    expect((await peek(side, e)).remaining).toBe(10);
  });

  it('settles every entry of a decision in one call, each by its own units', async () => {
    const side = makeSide();
    const a = entryOf(`${fresh()}:{m}:a`, makePolicy('token-bucket', 10, 1000, 'a'), 5);
    const b = entryOf(`${a.key}:b`, makePolicy('fixed-window', 10, 1000, 'b'), 5);
    side.at(T0 + 1);
    await side.store.decide([a, b], 'consume');
    expect(await side.store.settle([settleOf(a, 2), settleOf(b, 7)])).toEqual([true, true]);
    expect((await peek(side, a)).remaining).toBe(8);
    expect((await peek(side, b)).remaining).toBe(3);
  });

  it('rejects bad entries before settling anything', async () => {
    const side = makeSide();
    const policy = makePolicy('token-bucket', 10, 1000);
    const e = entryOf(`${fresh()}:{n}:tb`, policy, 5);
    side.at(T0 + 1);
    await side.store.decide([e], 'consume');
    for (const bad of [
      { actualUnits: -1 },
      { actualUnits: Number.NaN },
      { reservedAgoMs: -1 },
      { reservedUnits: 0 },
    ]) {
      await expect(
        side.store.settle([settleOf(e, 0), { ...settleOf(e, 0), key: `${e.key}:2`, ...bad }]),
      ).rejects.toThrow(/store: "(actualUnits|reservedAgoMs|cost)"/);
    }
    const sl = entryOf(`${fresh()}:{n}:sl`, makePolicy('sliding-log', 10, 1000), 2);
    await expect(side.store.settle([settleOf(sl, 0.5)])).rejects.toThrow(/whole number/);
    expect((await peek(side, e)).remaining).toBe(5);
  });
});

describe('the settle script on Redis', () => {
  const call = (keys: string[], ...args: (string | number)[]) =>
    redis.eval(SETTLE_SCRIPT.source, keys.length, ...keys, ...args);

  it('rejects bad arguments before reading or writing anything', async () => {
    const key = `${fresh()}:{z}:p`;
    await redis.set(key, '5|1000');
    const TB = ['token-bucket', 10, 1000, 100];
    await expect(call([key], '2000', ...TB, -1)).rejects.toThrow(/expected 9 arguments/);
    await expect(call([key], '2000', 'nope', 10, 1000, 100, -1, 1, 0, 0)).rejects.toThrow(
      /unknown algorithm/,
    );
    await expect(call([key], '2000', 'token-bucket', 0, 1000, 100, -1, 1, 0, 0)).rejects.toThrow(
      /positive numbers/,
    );
    await expect(call([key], '2000', ...TB, 'x', 1, 0, 0)).rejects.toThrow(
      /deltaUnits must be a finite number/,
    );
    await expect(call([key], '2000', ...TB, -2, 1, 0, 0)).rejects.toThrow(/reservedUnits must be a positive/);
    await expect(call([key], '2000', ...TB, -1, 0, 0, 0)).rejects.toThrow(/reservedUnits must be a positive/);
    await expect(call([key], '2000', ...TB, -1, 1, -5, 0)).rejects.toThrow(/reservedAgoMs/);
    await expect(call([key], '2000', ...TB, -1, 1, 5, 6)).rejects.toThrow(/answeredAgoMs/);
    await expect(call([key], '2000', ...TB, -1, 1, 5, -1)).rejects.toThrow(/answeredAgoMs/);
    await expect(call([key], 'soon', ...TB, -1, 1, 0, 0)).rejects.toThrow(/nowMs/);
    await expect(call([key], '2000', 'sliding-log', 10, 1000, 100, -0.5, 1, 0, 0)).rejects.toThrow(
      /sliding-log deltaUnits must be a whole number/,
    );
    expect(await redis.get(key)).toBe('5|1000');
    // 5 tokens at 1000, 6 at 1100, one refunded (reserved 2 at 1100).
    expect(await call([key], '1100', ...TB, -1, 2, 0, 0)).toEqual([1]);
    expect(await redis.get(key)).toBe('7|1100');
  });

  it('reads a bucket written under a larger limit as full at this one, also when the clock went back', async () => {
    // 15 tokens at 2000 (a limit of 20 wrote it); at 1000, under a limit of 10 (1 token / 100 ms):
    // 10 tokens at 2000 are 0 now, so a charge of 1 more is a debt of 1, kept as time.
    const key = `${fresh()}:{z}:tb`;
    await redis.set(key, '15|2000');
    expect(await call([key], '1000', 'token-bucket', 10, 1000, 100, 1, 1, 0, 0)).toEqual([1]);
    expect(await redis.get(key)).toBe('0|1100');
  });

  it('drops a settle on a bucket refilled exactly to full, where adding the refill falls an ulp short', async () => {
    // 6 tokens, 1100 ms to full: 0.3 tokens at 1000 are full at 2045 ((6 - 0.3) x 1100/6 = 1045
    // exactly), while 0.3 + 1045 / (1100/6) = 5.999999999999999.
    const key = `${fresh()}:{z}:tb`;
    await redis.set(key, '0.3|1000');
    expect(await call([key], '2045', 'token-bucket', 6, 1100, 1100 / 6, 1, 1, 0, 0)).toEqual([0]);
    expect(await redis.get(key)).toBe('0.3|1000');
  });

  it('reads a negative GCRA count owed (no script writes one) as 0, as decide does', async () => {
    // Owed 0 at 2000, read at 1000 (1 unit / 100 ms): a full burst of 10 owed, 1 more charged
    // is 1 unit of debt, kept as time.
    const key = `${fresh()}:{z}:gcra`;
    await redis.set(key, 'g-5|2000');
    expect(await call([key], '1000', 'gcra', 10, 1000, 100, 1, 1, 0, 0)).toEqual([1]);
    expect(await redis.get(key)).toBe('g10|1100');
  });

  it('runs again after SCRIPT FLUSH (EVAL on NOSCRIPT)', async () => {
    const side = redisSide();
    const e: StoreEntry = { key: `${fresh()}:{x}:tb`, policy: makePolicy('token-bucket', 10, 1000), cost: 5 };
    side.at(T0);
    await side.store.decide([e], 'consume');
    await redis.script('FLUSH');
    expect(await side.store.settle([{ ...e, reservedUnits: 5, actualUnits: 0, reservedAgoMs: 0 }])).toEqual([
      true,
    ]);
    expect((await side.store.decide([e], 'peek'))[0]?.remaining).toBe(10);
  });

  it('keeps the TTL on a refund and lengthens it for a charge (Redis TIME)', async () => {
    const store = new RedisStore({ client: redis });
    const policy = makePolicy('token-bucket', 10, 10_000); // 1 token / s
    const e: StoreEntry = { key: `${fresh()}:{y}:tb`, policy, cost: 5 };
    await store.decide([e], 'consume');
    const ttl = await redis.pttl(e.key);
    expect(ttl).toBeGreaterThan(4000);
    expect(ttl).toBeLessThanOrEqual(5001);
    await store.settle([{ ...e, reservedUnits: 5, actualUnits: 1, reservedAgoMs: 0 }]);
    expect(await redis.pttl(e.key)).toBeLessThanOrEqual(ttl);
    expect(await redis.pttl(e.key)).toBeGreaterThan(ttl - 1000);
    await store.settle([{ ...e, reservedUnits: 1, actualUnits: 9, reservedAgoMs: 0 }]);
    // 9 units used: full in about 9 s.
    expect(await redis.pttl(e.key)).toBeGreaterThan(8000);
  });
});

describe.each(SIDES)('reservations and settles on %s', (_name, makeSide) => {
  it.each(ALL_ALGORITHMS as Algorithm[])(
    '%s: never admit more than the policy allows over any window (frozen clock, settles after each check)',
    async (algorithm) => {
      await fc.assert(
        fc.asyncProperty(
          policyArb(algorithm, true),
          fc.array(
            fc.record({
              dtMs: fc.oneof(
                fc.constant(0),
                fc.integer({ min: 1, max: 2000 }).map((us) => us / 1000),
                fc.nat(3000),
              ),
              settleDtMs: fc.oneof(fc.constant(0), fc.nat(500)),
              share: fc.integer({ min: 1, max: 50 }),
              ratio: fc.constantFrom(0, 0.25, 0.5, 1, 1.5, 2),
            }),
            { minLength: 1, maxLength: 40 },
          ),
          startTimeArb,
          async (policy, steps, t0) => {
            const side = makeSide();
            const key = `${fresh()}:{inv}:p`;
            const admitted: Admitted[] = [];
            let now = t0;
            for (const step of steps) {
              now += step.dtMs;
              side.at(now);
              // Costs up to half the limit, so no settle's charge reaches the debt cap.
              let cost = Math.max(1, Math.floor((policy.limit * step.share) / 100));
              if (policy.algorithm !== 'sliding-log') cost = (policy.limit * step.share) / 100;
              const [v] = (await side.store.decide([{ key, policy, cost }], 'consume')) as [StoreVerdict];
              if (!v.allowed) continue;
              expect(withinPolicy(policy, admitted, now, cost), `admitted ${cost} at +${now - t0}`).toBe(
                true,
              );
              let actual = cost * step.ratio;
              if (policy.algorithm === 'sliding-log') actual = Math.round(actual);
              const reservedAt = now;
              now += step.settleDtMs;
              side.at(now);
              const [settled] = (await side.store.settle([
                { key, policy, reservedUnits: cost, actualUnits: actual, reservedAgoMs: now - reservedAt },
              ])) as [boolean];
              // A settle the store left alone (the key as good as expired, the window over) counts
              // what the check charged: a later charge of a refilled policy is dropped by design.
              admitted.push({ atMs: reservedAt, reserved: cost, actual: settled ? actual : cost });
            }
          },
        ),
        { numRuns: makeSide === memorySide ? 60 : 15 },
      );
    },
    PROPERTY_TIMEOUT_MS,
  );
});
