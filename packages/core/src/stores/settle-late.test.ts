import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisProcess, startRedis } from '../../../../test/support/redis-server.js';
import { ALL_ALGORITHMS, makePolicy, policyArb, startTimeArb } from '../algorithms/testing.test-support.js';
import type { Algorithm, StoreEntry, StoreVerdict } from '../types.js';
import {
  type Admitted,
  memorySettleSide,
  redisSettleSide,
  type SettleSide,
  withinPolicy,
} from './settle.test-support.js';

let server: RedisProcess;
let redis: Redis;
let run = 0;
/** A key prefix no other run used. */
const fresh = (): string => `late${++run}`;

beforeAll(async () => {
  server = await startRedis();
  redis = new Redis(server.port, '127.0.0.1', { maxRetriesPerRequest: 1 });
});

afterAll(async () => {
  redis?.disconnect();
  await server?.stop();
});

const SIDES = [
  ['MemoryStore', memorySettleSide],
  ['RedisStore', () => redisSettleSide(redis)],
] as const;

/** A window boundary (ms since the epoch): a multiple of every window used below. */
const T0 = 1_764_400_200_000;

describe.each(SIDES)('a refund after the key refilled, on %s', (_name, makeSide) => {
  it.each(['token-bucket', 'gcra', 'sliding-log'] as Algorithm[])(
    '%s: reserve the whole burst, hold 2.5 s, drain the fresh key, settle 0: the refund is dropped',
    async (algorithm) => {
      for (const expired of [false, true]) {
        const side: SettleSide = makeSide();
        const policy = makePolicy(algorithm, 100, 2000); // 100 units, refilled in 2 s
        const e: StoreEntry = { key: `${fresh()}:{a}:p`, policy, cost: 100 };
        side.at(T0);
        expect((await side.store.decide([e], 'consume'))[0]?.allowed).toBe(true);
        side.at(T0 + 2500);
        // Redis drops the key once it is full again; with an explicit time it keeps it longer.
        if (expired) await side.forget([e.key]);
        expect((await side.store.decide([e], 'consume'))[0]?.allowed).toBe(true);
        const settled = await side.store.settle([
          { key: e.key, policy, reservedUnits: 100, actualUnits: 0, reservedAgoMs: 2500 },
        ]);
        expect(settled, `expired: ${expired}`).toEqual([false]);
        const [after] = (await side.store.decide([{ ...e, cost: 1 }], 'peek')) as [StoreVerdict];
        expect(after.remaining).toBe(0);
        expect(after.allowed).toBe(false);
      }
    },
  );
});

describe.each(SIDES)('what a late refund gives back, on %s', (_name, makeSide) => {
  const settleOf = (e: StoreEntry, reservedAgoMs: number, answeredAgoMs?: number) => ({
    key: e.key,
    policy: e.policy,
    reservedUnits: e.cost,
    actualUnits: 0,
    reservedAgoMs,
    ...(answeredAgoMs === undefined ? {} : { answeredAgoMs }),
  });
  const remaining = async (side: SettleSide, e: StoreEntry) =>
    ((await side.store.decide([{ ...e, cost: 1 }], 'peek')) as [StoreVerdict])[0].remaining;

  it.each(['token-bucket', 'gcra'] as Algorithm[])(
    '%s: the reservation less what the bucket earned back since it',
    async (algorithm) => {
      const side = makeSide();
      const policy = makePolicy(algorithm, 10, 1000); // 1 unit / 100 ms
      const e: StoreEntry = { key: `${fresh()}:{b}:p`, policy, cost: 4 };
      side.at(T0);
      await side.store.decide([e], 'consume'); // 6 left
      side.at(T0 + 100);
      await side.store.decide([{ ...e, cost: 5 }], 'consume'); // 6 + 1 - 5 = 2 left
      side.at(T0 + 300);
      // 3 units earned since the reservation: 1 of its 4 comes back. 2 + 2 + 1 = 5.
      expect(await side.store.settle([settleOf(e, 300)])).toEqual([true]);
      expect(await remaining(side, e)).toBe(5);
      // Exactly as much earned as reserved: nothing comes back.
      const f: StoreEntry = { key: `${fresh()}:{b}:p`, policy, cost: 4 };
      side.at(T0);
      await side.store.decide([f], 'consume');
      await side.store.decide([{ ...f, cost: 6 }], 'consume');
      side.at(T0 + 400);
      expect(await side.store.settle([settleOf(f, 400)])).toEqual([false]);
      expect(await remaining(side, f)).toBe(4);
    },
  );

  it.each(['token-bucket', 'gcra'] as Algorithm[])(
    '%s: the refill counted to the latest time the bucket saw, when the clock went back',
    async (algorithm) => {
      const side = makeSide();
      const policy = makePolicy(algorithm, 10, 1000);
      const e: StoreEntry = { key: `${fresh()}:{c}:p`, policy, cost: 4 };
      side.at(T0);
      await side.store.decide([e], 'consume');
      side.at(T0 + 300);
      await side.store.decide([{ ...e, cost: 3 }], 'consume'); // 6 + 3 - 3 = 6 left, at T0 + 300
      side.at(T0 + 100);
      // By the limiter's clock 100 ms since the reservation, by the bucket's 300: 1 unit back,
      // on 4 left at T0 + 100 (the 2 earned after it not yet there).
      expect(await side.store.settle([settleOf(e, 100)])).toEqual([true]);
      expect(await remaining(side, e)).toBe(5);
    },
  );

  it("sliding-log: refunds the reservation's record, charged between the check's ask and its answer", async () => {
    const side = makeSide();
    const policy = makePolicy('sliding-log', 10, 1000);
    const e: StoreEntry = { key: `${fresh()}:{d}:p`, policy, cost: 3 };
    side.at(T0 + 100);
    await side.store.decide([e], 'consume');
    side.at(T0 + 120);
    await side.store.decide([{ ...e, cost: 2 }], 'consume'); // a request admitted after it
    side.at(T0 + 300);
    // Asked at T0 + 50, answered at T0 + 110: of 4 asked back, the 3 of the record at T0 + 100, none
    // of the one at T0 + 120.
    expect(await side.store.settle([settleOf({ ...e, cost: 4 }, 250, 190)])).toEqual([true]);
    expect(await remaining(side, e)).toBe(8);
    side.at(T0 + 1101);
    // The record at T0 + 100 is gone; what is left is the one at T0 + 120, whole.
    expect(await remaining(side, e)).toBe(8);
    side.at(T0 + 1121);
    expect(await remaining(side, e)).toBe(10);
  });
});

describe.each(SIDES)('reservations held across other checks on %s', (_name, makeSide) => {
  it.each(ALL_ALGORITHMS as Algorithm[])(
    '%s: refunds never admit more than the policy allows over any window (time both ways for buckets)',
    async (algorithm) => {
      // A bucket lives at the latest time it was written at, so its allowance is counted at that
      // time; a window algorithm stamps what it admits with the clock as it is (time moves forward
      // for those; the differential test moves it both ways).
      const bucket = algorithm === 'token-bucket' || algorithm === 'gcra';
      const forward = fc.oneof(
        fc.constant(0),
        fc.integer({ min: 1, max: 2000 }).map((us) => us / 1000),
        fc.nat(3000),
      );
      await fc.assert(
        fc.asyncProperty(
          policyArb(algorithm, true),
          fc.array(
            fc.record({
              dtMs: bucket
                ? fc.oneof(
                    forward,
                    forward.map((d) => -d),
                  )
                : forward,
              share: fc.integer({ min: 1, max: 100 }),
              // Settle one of the reservations held (by index), to a share of it; or none.
              settle: fc.option(fc.record({ pick: fc.nat(), ratio: fc.constantFrom(0, 0.25, 0.5, 1) })),
            }),
            { minLength: 1, maxLength: 40 },
          ),
          startTimeArb,
          async (p, steps, t0) => {
            // Windows of 1 to 3000 ms, so held reservations outlive refills and windows.
            const policy = makePolicy(p.algorithm, p.limit, 1 + (p.windowMs % 3000));
            const side = makeSide();
            const key = `${fresh()}:{inv}:p`;
            // Every reservation made (to settle), and those the model counts: the key's life so far.
            const reservations: (Admitted & { clockMs: number; settled: boolean })[] = [];
            let admitted: Admitted[] = [];
            let now = t0;
            let latest = Number.NEGATIVE_INFINITY;
            // When the key expires by its last charge (`now + resetMs + 1`, as the stores set it).
            let expiresAtMs = Number.POSITIVE_INFINITY;
            for (const step of steps) {
              now += step.dtMs;
              side.at(now);
              if (now > expiresAtMs) {
                // A store that reads the key now finds it expired (full): a new key's life begins,
                // and only reservations held from before can carry over into it (by their settles).
                admitted = [];
                latest = Number.NEGATIVE_INFINITY;
                expiresAtMs = Number.POSITIVE_INFINITY;
              }
              const held = reservations.filter((a) => !a.settled);
              if (step.settle !== null && held.length > 0) {
                const a = held[step.settle.pick % held.length] as (typeof held)[number];
                let actual = a.reserved * step.settle.ratio;
                if (policy.algorithm === 'sliding-log') actual = Math.round(actual);
                const [settled] = (await side.store.settle([
                  {
                    key,
                    policy,
                    reservedUnits: a.reserved,
                    actualUnits: actual,
                    // As the limiter measures it: its clock since the check, never below 0.
                    reservedAgoMs: Math.max(0, now - a.clockMs),
                  },
                ])) as [boolean];
                a.settled = true;
                // Counted as used what the settle asked for (a refund the store cut counts in full):
                // the check below is then the loosest the store could have to meet.
                if (settled) {
                  Object.assign(a, { actual });
                  latest = Math.max(latest, now);
                }
                continue;
              }
              let cost = Math.max(1, Math.floor((policy.limit * step.share) / 100));
              if (policy.algorithm !== 'sliding-log') cost = (policy.limit * step.share) / 100;
              const [v] = (await side.store.decide([{ key, policy, cost }], 'consume')) as [StoreVerdict];
              if (!v.allowed) continue;
              const at = bucket ? Math.max(latest, now) : now;
              latest = at;
              expect(withinPolicy(policy, admitted, at, cost), `admitted ${cost} at +${now - t0}`).toBe(true);
              const reservation = { atMs: at, clockMs: now, reserved: cost, actual: cost, settled: false };
              reservations.push(reservation);
              admitted.push(reservation);
              expiresAtMs = now + v.resetMs + 1;
            }
          },
        ),
        { numRuns: makeSide === memorySettleSide ? 500 : 100 },
      );
    },
  );
});
