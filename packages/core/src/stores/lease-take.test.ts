/**
 * Lease takes (entries with `leastCost`): the decide script and MemoryStore charge the same units
 * for every algorithm, at the same explicit times, and a take never charges more than is left.
 */
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisProcess, startRedis } from '../../../../test/support/redis-server.js';
import { ALGORITHMS } from '../algorithms/registry.js';
import { ALL_ALGORITHMS, policyArb, startTimeArb } from '../algorithms/testing.test-support.js';
import type { CompiledPolicy, StoreEntry, StoreVerdict } from '../types.js';
import { MemoryStore } from './memory-store.js';
import { RedisStore } from './redis-store.js';

let server: RedisProcess;
let redis: Redis;
let run = 0;

beforeAll(async () => {
  server = await startRedis();
  redis = new Redis(server.port, '127.0.0.1', { maxRetriesPerRequest: 1 });
});

afterAll(async () => {
  redis?.disconnect();
  await server?.stop();
});

/** One step: after `dtMs`, a plain check of `cost`, or a take of `want` down to `least`. */
interface Step {
  readonly dtMs: number;
  readonly want: number;
  readonly least: number | undefined;
}

const stepArb = (policy: CompiledPolicy): fc.Arbitrary<Step> =>
  fc
    .record({
      dtMs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: Math.ceil(policy.windowMs / 3) + 1 })),
      want: fc.integer({ min: 1, max: policy.limit }),
      leastShare: fc.option(fc.double({ min: 0, max: 1, noNaN: true }), { nil: undefined }),
    })
    .map(({ dtMs, want, leastShare }) => ({
      dtMs,
      want,
      least: leastShare === undefined ? undefined : Math.max(1, Math.ceil(want * leastShare)),
    }));

describe.each(ALL_ALGORITHMS)('a lease take, %s', (algorithm) => {
  it('charges the same units in the decide script and in MemoryStore, never more than is left', async () => {
    await fc.assert(
      fc.asyncProperty(
        policyArb(algorithm).chain((policy) =>
          fc.tuple(fc.constant(policy), fc.array(stepArb(policy), { minLength: 1, maxLength: 12 })),
        ),
        startTimeArb,
        async ([policy, steps], startMs) => {
          let nowMs = startMs;
          const memory = new MemoryStore({ clock: () => nowMs });
          const store = new RedisStore({ client: redis, clock: () => nowMs });
          const key = `lt${++run}:{a}:${algorithm}`;
          for (const step of steps) {
            nowMs += step.dtMs;
            const entry: StoreEntry = {
              key,
              policy,
              cost: step.want,
              ...(step.least !== undefined && { leastCost: step.least }),
            };
            const before = (await memory.decide([entry], 'peek'))[0] as StoreVerdict;
            const fromMemory = await memory.decide([entry], 'consume');
            const fromRedis = await store.decide([entry], 'consume');
            expect(fromRedis).toEqual(fromMemory);
            const verdict = fromMemory[0] as StoreVerdict;
            if (step.least === undefined) {
              expect(verdict.chargedUnits).toBeUndefined();
              continue;
            }
            const charged = verdict.chargedUnits as number;
            if (verdict.allowed) {
              expect(charged).toBeGreaterThanOrEqual(step.least);
              expect(charged).toBeLessThanOrEqual(step.want);
              // All of it, or all that was left.
              if (charged < step.want) expect(charged).toBe(before.remaining);
            } else {
              expect(charged).toBe(0);
              expect(before.remaining).toBeLessThan(step.least);
            }
          }
        },
      ),
      { numRuns: 25 },
    );
  });
});

describe('lease take arguments', () => {
  const policy: CompiledPolicy = {
    name: 'p',
    algorithm: 'token-bucket',
    limit: 10,
    windowMs: 10_000,
    intervalMs: 1000,
    cost: 1,
    failMode: 'closed',
    shadow: false,
    scope: 'identity',
  };

  it('a take of 10 down to 1 from a bucket with 4 left charges the 4', async () => {
    const nowMs = 1_764_400_200_000;
    for (const store of [
      new MemoryStore({ clock: () => nowMs }),
      new RedisStore({ client: redis, clock: () => nowMs }),
    ]) {
      const key = `lt${++run}:{b}`;
      await store.decide([{ key, policy, cost: 6 }], 'consume');
      const [take] = await store.decide([{ key, policy, cost: 10, leastCost: 1 }], 'consume');
      expect(take).toEqual({
        allowed: true,
        remaining: 0,
        resetMs: 10_000,
        retryAfterMs: 0,
        chargedUnits: 4,
      });
      // Empty now: a take down to 2 is denied, with the wait for 2 units.
      const [denied] = await store.decide([{ key, policy, cost: 10, leastCost: 2 }], 'consume');
      expect(denied).toEqual({
        allowed: false,
        remaining: 0,
        resetMs: 10_000,
        retryAfterMs: 2000,
        chargedUnits: 0,
      });
    }
  });

  it('a take in a decision another policy denies charges nothing', async () => {
    const nowMs = 1_764_400_200_000;
    const strict: CompiledPolicy = { ...policy, name: 'strict', limit: 1, windowMs: 1000 };
    for (const store of [
      new MemoryStore({ clock: () => nowMs }),
      new RedisStore({ client: redis, clock: () => nowMs }),
    ]) {
      const key = `lt${++run}:{c}`;
      await store.decide([{ key: `${key}:s`, policy: strict, cost: 1 }], 'consume');
      const verdicts = await store.decide(
        [
          { key, policy, cost: 10, leastCost: 1 },
          { key: `${key}:s`, policy: strict, cost: 1 },
        ],
        'consume',
      );
      expect(verdicts[0]).toMatchObject({ allowed: true, remaining: 10, chargedUnits: 0 });
      expect(verdicts[1]?.allowed).toBe(false);
    }
  });

  it('rejects a least above the cost, a fractional least for whole-cost algorithms, and a take with a request record', async () => {
    const nowMs = 1_764_400_200_000;
    const store = new MemoryStore({ clock: () => nowMs });
    await expect(store.decide([{ key: 'k', policy, cost: 2, leastCost: 3 }], 'consume')).rejects.toThrow(
      /"leastCost" must be at most the cost, got 3/,
    );
    const log: CompiledPolicy = { ...policy, algorithm: 'sliding-log' };
    expect(ALGORITHMS['sliding-log'].store.wholeCosts).toBe(true);
    await expect(
      store.decide([{ key: 'k', policy: log, cost: 2, leastCost: 1.5 }], 'consume'),
    ).rejects.toThrow(/"leastCost" must be at most the cost and whole, got 1.5/);
    const redisStore = new RedisStore({ client: redis, clock: () => nowMs });
    await expect(
      redisStore.decide([{ key: 'k{x}', policy, cost: 2, leastCost: 1 }], 'consume', {
        requestKey: 'r{x}',
        requestTtlMs: 1000,
      }),
    ).rejects.toThrow(/lease take cannot have a request record/);
  });
});
