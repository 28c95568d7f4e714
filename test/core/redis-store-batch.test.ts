/**
 * RedisStore batching against a real redis-server: checks issued in the same event-loop turn
 * share ONE script call and are decided one after another in the order issued, exactly as
 * separate calls would be (checked against MemoryStore run one check at a time, the clock
 * moving both ways between turns).
 */
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { beforeEach, describe, expect, it } from 'vitest';
import { ALGORITHM_NAMES } from '../../packages/core/src/algorithms/registry.js';
import { buildKey } from '../../packages/core/src/keys/build-keys.js';
import { definePolicy } from '../../packages/core/src/policy/define-policy.js';
import { DECIDE_SCRIPTS } from '../../packages/core/src/redis/script.js';
import { MemoryStore } from '../../packages/core/src/stores/memory-store.js';
import { RedisStore } from '../../packages/core/src/stores/redis-store.js';
import type { CompiledPolicy, EvalClient, StoreEntry, StoreMode } from '../../packages/core/src/types.js';
import { useRedis } from '../support/redis-fixture.js';

const redis = useRedis();

beforeEach(async () => {
  await redis.admin.flushall();
  // Every decide script (the full one and each algorithm's): no NOSCRIPT + EVAL in the counts.
  for (const script of DECIDE_SCRIPTS) await redis.admin.script('LOAD', script.source);
  await redis.admin.config('RESETSTAT');
});

/** EVALSHA + EVAL calls Redis has run since the last RESETSTAT. */
async function scriptCalls(): Promise<number> {
  const info = await redis.admin.info('commandstats');
  let calls = 0;
  for (const m of info.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)) calls += Number(m[1]);
  return calls;
}

const T0 = 1_800_000_000_000;
const three = definePolicy({ name: 'three', algorithm: 'fixed-window', limit: 3, window: '10s' });

/**
 * The call counts below are per event-loop turn. A batch is also cut when a check finds it
 * older than maxBatchWaitMs (2 ms by default; its own test below), which a slow or busy
 * machine can reach while one turn issues its checks: those tests wait a minute instead.
 */
const ONE_TURN = { maxBatchWaitMs: 60_000 } as const;

function entry(identity: string, policy: CompiledPolicy = three, cost = 1): StoreEntry[] {
  return [{ key: buildKey('b', identity, policy), policy, cost }];
}

describe('RedisStore batching', () => {
  it('sends the checks of one event-loop turn in one script call, each with its own verdicts', async () => {
    const store = new RedisStore({ client: redis.client, clock: () => T0, ...ONE_TURN });
    const verdicts = await Promise.all(
      Array.from({ length: 40 }, (_, i) => store.decide(entry(`id-${i % 10}`), 'consume')),
    );
    expect(await scriptCalls()).toBe(1);
    // Ten identities, four checks each in issue order: 2, 1, 0 left, then denied.
    for (let i = 0; i < 40; i++) {
      const round = Math.floor(i / 10);
      expect(verdicts[i]?.[0]?.allowed).toBe(round < 3);
      expect(verdicts[i]?.[0]?.remaining).toBe(Math.max(0, 2 - round));
    }
  });

  it('caps a call at maxBatch checks; maxBatch 1 sends every check alone', async () => {
    const capped = new RedisStore({ client: redis.client, clock: () => T0, maxBatch: 4, ...ONE_TURN });
    await Promise.all(Array.from({ length: 10 }, (_, i) => capped.decide(entry(`c-${i}`), 'consume')));
    expect(await scriptCalls()).toBe(3);
    await redis.admin.config('RESETSTAT');
    const single = new RedisStore({ client: redis.client, clock: () => T0, maxBatch: 1 });
    await Promise.all(Array.from({ length: 5 }, (_, i) => single.decide(entry(`s-${i}`), 'consume')));
    expect(await scriptCalls()).toBe(5);
  });

  it('batches across hash tags only on a client known to be standalone', async () => {
    // A wrapper hides what the client is: it could front a Cluster, so only checks of one
    // hash tag share a call there.
    const wrapped: EvalClient = {
      evalsha: (...args) => redis.client.evalsha(...(args as [string, number])),
      eval: (...args) => redis.client.eval(...(args as [string, number])),
    };
    const unknown = new RedisStore({ client: wrapped, clock: () => T0, ...ONE_TURN });
    await Promise.all([
      ...Array.from({ length: 6 }, (_, i) => unknown.decide(entry(`w-${i}`), 'consume')),
      ...Array.from({ length: 4 }, () => unknown.decide(entry('w-same'), 'consume')),
    ]);
    expect(await scriptCalls()).toBe(7);
    await redis.admin.config('RESETSTAT');
    const told = new RedisStore({ client: wrapped, clock: () => T0, batchAcrossSlots: true, ...ONE_TURN });
    await Promise.all(Array.from({ length: 6 }, (_, i) => told.decide(entry(`t-${i}`), 'consume')));
    expect(await scriptCalls()).toBe(1);
  });

  it('flushes when its scheduleFlush says so', async () => {
    const flushes: (() => void)[] = [];
    const store = new RedisStore({
      client: redis.client,
      clock: () => T0,
      scheduleFlush: (flush) => flushes.push(flush),
    });
    const pending = [store.decide(entry('m-1'), 'consume'), store.decide(entry('m-2'), 'consume')];
    await new Promise((done) => setTimeout(done, 20));
    expect(await scriptCalls()).toBe(0);
    expect(flushes).toHaveLength(1);
    flushes[0]?.();
    expect((await Promise.all(pending)).map((v) => v[0]?.remaining)).toEqual([2, 2]);
    expect(await scriptCalls()).toBe(1);
  });

  it('sends a batch when a check finds it older than maxBatchWaitMs, without waiting for the flush', async () => {
    const never = () => {};
    const store = new RedisStore({
      client: redis.client,
      clock: () => T0,
      scheduleFlush: never,
      maxBatchWaitMs: 5,
    });
    const first = store.decide(entry('w-1'), 'consume');
    await new Promise((done) => setTimeout(done, 20));
    expect(await scriptCalls()).toBe(0);
    // The batch is 20 ms old: this check joins it and sends both.
    const second = store.decide(entry('w-2'), 'consume');
    expect((await Promise.all([first, second])).map((v) => v[0]?.remaining)).toEqual([2, 2]);
    expect(await scriptCalls()).toBe(1);
  });

  it('sends the checks still waiting in a batch when it closes, before quitting its client', async () => {
    const own = new Redis(redis.server.port, '127.0.0.1');
    const never = () => {};
    const store = new RedisStore({ client: own, clock: () => T0, scheduleFlush: never, ownsClient: true });
    const pending = store.decide(entry('c-1'), 'consume');
    await store.close();
    expect((await pending)[0]?.remaining).toBe(2);
    if (own.status !== 'end') await new Promise((done) => own.once('end', done));
    expect(own.status).toBe('end');
  });

  it('sends the checks issued before a reset ahead of it', async () => {
    const never = () => {};
    const store = new RedisStore({ client: redis.client, clock: () => T0, scheduleFlush: never });
    const charged = store.decide(entry('r-1'), 'consume');
    await store.reset(entry('r-1').map((e) => e.key));
    expect((await charged)[0]?.remaining).toBe(2);
    // The reset came after the charge: the quota is whole again.
    const other = new RedisStore({ client: redis.client, clock: () => T0 });
    expect((await other.decide(entry('r-1'), 'peek'))[0]?.remaining).toBe(3);
  });

  it('names the option when maxBatch is not a positive integer', () => {
    expect(() => new RedisStore({ client: redis.client, maxBatch: 0 })).toThrow(
      'RedisStore: "maxBatch" must be a positive integer, got 0',
    );
    expect(() => new RedisStore({ client: redis.client, maxBatch: 1.5 })).toThrow(/"maxBatch".*1\.5/);
    expect(() => new RedisStore({ client: redis.client, maxBatchWaitMs: -1 })).toThrow(
      'RedisStore: "maxBatchWaitMs" must be a finite number of milliseconds >= 0, got -1',
    );
    // @ts-expect-error: a string where a boolean belongs
    expect(() => new RedisStore({ client: redis.client, batchAcrossSlots: 'yes' })).toThrow(
      /"batchAcrossSlots".*yes/,
    );
  });

  it('rejects a bad check alone; the rest of its turn is decided', async () => {
    const store = new RedisStore({ client: redis.client, clock: () => T0, ...ONE_TURN });
    const bad: StoreEntry[] = [{ key: 'b:{x}:three', policy: three, cost: -1 }];
    const results = await Promise.allSettled([
      store.decide(entry('ok-1'), 'consume'),
      store.decide(bad, 'consume'),
      store.decide(entry('ok-2'), 'consume'),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(String((results[1] as PromiseRejectedResult).reason)).toMatch(/"cost" must be a positive/);
    expect(await scriptCalls()).toBe(1);
  });

  it('gives a check made at another explicit time a call of its own', async () => {
    let now = T0;
    const store = new RedisStore({ client: redis.client, clock: () => now, ...ONE_TURN });
    const first = store.decide(entry('t'), 'consume');
    now += 10_000; // the next fixed window: a fresh quota
    const second = store.decide(entry('t'), 'consume');
    const third = store.decide(entry('t'), 'consume');
    expect((await first)[0]?.remaining).toBe(2);
    expect((await second)[0]?.remaining).toBe(2);
    expect((await third)[0]?.remaining).toBe(1);
    expect(await scriptCalls()).toBe(2);
  });

  it('fails every check of a call together when the call fails', async () => {
    const broken = new Redis(redis.server.port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 0 });
    broken.disconnect();
    const store = new RedisStore({ client: broken, clock: () => T0 });
    const results = await Promise.allSettled([
      store.decide(entry('f1'), 'consume'),
      store.decide(entry('f2'), 'peek'),
    ]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
  });

  it('decides a batch exactly as MemoryStore decides the same checks one at a time', async () => {
    // The algorithms that count units (a concurrency entry costs one slot: its own batch test in
    // packages/core/src/stores/concurrency.test.ts).
    const rates = ALGORITHM_NAMES.filter((algorithm) => algorithm !== 'concurrency');
    const policies = rates.flatMap((algorithm) => [
      definePolicy({ name: `${algorithm}-a`, algorithm, limit: 3, window: '1s' }),
      definePolicy({ name: `${algorithm}-b`, algorithm, limit: 5, window: '10s' }),
    ]);
    const check = fc.record({
      identity: fc.constantFrom('u1', 'u2', 'u3'),
      policies: fc.uniqueArray(fc.integer({ min: 0, max: policies.length - 1 }), {
        minLength: 1,
        maxLength: 3,
      }),
      cost: fc.integer({ min: 1, max: 3 }),
      mode: fc.constantFrom<StoreMode>('consume', 'consume', 'consume', 'peek'),
    });
    // Time moves both ways between turns: repeats, small and window-sized steps, jumps of a day.
    const turn = fc.record({
      advanceMs: fc.oneof(
        fc.constant(0),
        fc.integer({ min: -700, max: 700 }),
        fc.integer({ min: -12_000, max: 12_000 }),
        fc.integer({ min: -4000, max: 4000 }).map((us) => us / 1000),
        fc.constantFrom(-10_000, 10_000, -86_400_000, 86_400_000),
      ),
      checks: fc.array(check, { minLength: 1, maxLength: 12 }),
    });
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(turn, { minLength: 1, maxLength: 8 }), async (turns) => {
        run += 1;
        let now = T0;
        const clock = () => now;
        const batched = new RedisStore({ client: redis.client, clock });
        const memory = new MemoryStore({ clock });
        // Expiry the same on both: once the clock passed a key's TTL it is forgotten on both
        // (Redis expires keys by its own clock, not this one; MemoryStore drops them lazily).
        const expiresAtMs = new Map<string, number>();
        for (const t of turns) {
          now += t.advanceMs;
          const expired = [...expiresAtMs].filter(([, at]) => now > at).map(([key]) => key);
          if (expired.length > 0) {
            await batched.reset(expired);
            await memory.reset(expired);
            for (const key of expired) expiresAtMs.delete(key);
          }
          const calls = t.checks.map((c) => ({
            mode: c.mode,
            entries: c.policies.map((i) => {
              const policy = policies[i] as CompiledPolicy;
              return { key: buildKey(`p${run}`, c.identity, policy), policy, cost: c.cost };
            }),
          }));
          const fromRedis = await Promise.all(calls.map((c) => batched.decide(c.entries, c.mode)));
          const fromMemory = [];
          for (const c of calls) fromMemory.push(await memory.decide(c.entries, c.mode));
          expect(fromRedis).toEqual(fromMemory);
          calls.forEach((c, i) => {
            const verdicts = fromMemory[i]!;
            if (c.mode !== 'consume' || !verdicts.every((v) => v.allowed)) return;
            c.entries.forEach((e, j) => {
              expiresAtMs.set(e.key, now + verdicts[j]!.resetMs + 1);
            });
          });
        }
      }),
      { numRuns: 60 },
    );
  });
});
