/**
 * RedisStore against a real redis-server: one script call per decision, EVALSHA with EVAL after
 * NOSCRIPT, explicit clock for tests, reset.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { buildKey } from '../../packages/core/src/keys/build-keys.js';
import { definePolicy } from '../../packages/core/src/policy/define-policy.js';
import { decideScriptFor } from '../../packages/core/src/redis/script.js';
import { isNoScriptError, RedisStore } from '../../packages/core/src/stores/redis-store.js';
import type { EvalClient, StoreEntry } from '../../packages/core/src/types.js';
import { useRedis } from '../support/redis-fixture.js';

const redis = useRedis();

beforeEach(async () => {
  await redis.admin.flushall();
  await redis.admin.config('RESETSTAT');
});

const bucket = definePolicy({ name: 'bucket', burst: 3, rate: '1/s' });
const window = definePolicy({ name: 'window', algorithm: 'sliding-window', limit: 5, window: '1m' });

function entries(identity: string, cost = 1): StoreEntry[] {
  return [bucket, window].map((policy) => ({ key: buildKey('t', identity, policy), policy, cost }));
}

/** `calls` counts of EVALSHA and EVAL from Redis's own command statistics. */
async function scriptCalls(): Promise<{ evalsha: number; eval: number }> {
  const info = await redis.admin.info('commandstats');
  const count = (name: string) => Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(info)?.[1] ?? 0);
  return { evalsha: count('evalsha'), eval: count('eval') };
}

describe('RedisStore', () => {
  it('decides every entry in one script call, all or nothing', async () => {
    const store = new RedisStore({ client: redis.client });
    for (let i = 0; i < 3; i++) {
      const verdicts = await store.decide(entries('a'), 'consume');
      expect(verdicts.map((v) => v.allowed)).toEqual([true, true]);
    }
    const denied = await store.decide(entries('a'), 'consume');
    expect(denied.map((v) => v.allowed)).toEqual([false, true]);
    expect(denied[0]!.retryAfterMs).toBeGreaterThan(0);
    // The window policy was not charged by the denied call: 5 - 3 = 2 left.
    const peeked = await store.decide(entries('a'), 'peek');
    expect(peeked[1]!.remaining).toBe(2);
    const calls = await scriptCalls();
    // 3 + 1 + 1 checks; the very first EVALSHA met NOSCRIPT and fell back to EVAL once.
    expect(calls.evalsha).toBe(5);
    expect(calls.eval).toBe(1);
  });

  it('carries on after SCRIPT FLUSH: the next check succeeds through EVAL', async () => {
    const store = new RedisStore({ client: redis.client });
    // The shape of the decide script the store sends for these entries.
    const script = decideScriptFor(entries('b'));
    await store.decide(entries('b'), 'consume');
    expect(await redis.admin.script('EXISTS', script.sha1)).toEqual([1]);
    for (let round = 0; round < 2; round++) {
      await redis.admin.script('FLUSH');
      expect(await redis.admin.script('EXISTS', script.sha1)).toEqual([0]);
      const verdicts = await store.decide(entries('b'), 'consume');
      expect(verdicts.every((v) => v.allowed)).toBe(true);
      expect(await redis.admin.script('EXISTS', script.sha1)).toEqual([1]);
    }
    const peeked = await store.decide(entries('b'), 'peek');
    expect(peeked[1]!.remaining).toBe(2); // three charges, none lost or doubled
  });

  it('passes an explicit clock to the script', async () => {
    let now = 1_000_000;
    const store = new RedisStore({ client: redis.client, clock: () => now });
    const one = [{ key: buildKey('t', 'c', bucket), policy: bucket, cost: 3 }];
    expect((await store.decide(one, 'consume'))[0]!.allowed).toBe(true);
    const denied = (await store.decide(one, 'consume'))[0]!;
    expect(denied.allowed).toBe(false);
    expect(denied.retryAfterMs).toBe(3000); // three tokens at one per second
    now += 1000;
    expect((await store.decide([{ ...one[0]!, cost: 1 }], 'consume'))[0]!.allowed).toBe(true);
    now -= 60_000; // time going backwards creates no capacity
    expect((await store.decide([{ ...one[0]!, cost: 1 }], 'consume'))[0]!.allowed).toBe(false);
  });

  it('reset deletes the keys', async () => {
    const store = new RedisStore({ client: redis.client });
    const e = entries('d', 3);
    await store.decide(e, 'consume');
    expect(await redis.admin.exists(e[0]!.key)).toBe(1);
    await store.reset(e.map((x) => x.key));
    expect(await redis.admin.exists(e[0]!.key, e[1]!.key)).toBe(0);
    expect((await store.decide(e, 'consume')).every((v) => v.allowed)).toBe(true);
  });

  it('propagates errors other than NOSCRIPT without retrying', async () => {
    let evals = 0;
    const failing: EvalClient = {
      evalsha: () => Promise.reject(new Error('READONLY You can not write against a read only replica.')),
      eval: () => {
        evals++;
        return Promise.resolve([]);
      },
    };
    await expect(new RedisStore({ client: failing }).decide(entries('e'), 'consume')).rejects.toThrow(
      'READONLY',
    );
    expect(evals).toBe(0);
  });

  it('recognizes NOSCRIPT from ioredis and REST clients', () => {
    expect(isNoScriptError(new Error('NOSCRIPT No matching script. Please use EVAL.'))).toBe(true);
    expect(isNoScriptError(new Error('ERR something else'))).toBe(false);
    expect(isNoScriptError(undefined)).toBe(false);
  });

  it('rejects a client without evalsha/eval', () => {
    expect(() => new RedisStore({ client: {} as EvalClient })).toThrow(
      'RedisStore: "client" must offer evalsha() and eval() (an ioredis Redis or Cluster)',
    );
  });
});
