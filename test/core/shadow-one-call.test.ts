/**
 * Shadow policies on a real Redis: a check that only a shadow policy denied is decided by ONE
 * script call (counted in Redis's own INFO commandstats), charges the enforced policies and no
 * shadow one, and an idempotent request keeps ONE record key; its retry replays, charging nothing.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { createLimiter } from '../../packages/core/src/limiter/create-limiter.js';
import { DECIDE_SCRIPTS } from '../../packages/core/src/redis/script.js';
import { RedisStore } from '../../packages/core/src/stores/redis-store.js';
import type { PolicyInput } from '../../packages/core/src/types.js';
import { useRedis } from '../support/redis-fixture.js';

const redis = useRedis();

beforeEach(async () => {
  await redis.admin.flushall();
  // Loaded up front, so every call of the limiter is one EVALSHA (no NOSCRIPT fallback to count).
  for (const script of DECIDE_SCRIPTS) await redis.admin.script('LOAD', script.source);
  await redis.admin.config('RESETSTAT');
});

/** EVALSHA and EVAL calls Redis counted since the last RESETSTAT. */
async function scriptCalls(): Promise<number> {
  const info = await redis.admin.info('commandstats');
  let calls = 0;
  for (const m of info.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)) calls += Number(m[1]);
  return calls;
}

const policies: PolicyInput[] = [
  { name: 'payments', burst: 20, rate: '2/s', cost: 5 },
  { name: 'transfers', algorithm: 'sliding-window', limit: 3, window: '60s' },
  { name: 'probe', algorithm: 'fixed-window', limit: 1, window: '60s', shadow: true },
];

function limiterOn(prefix: string) {
  return createLimiter({
    policies,
    prefix,
    store: new RedisStore({ client: redis.client }),
    timeoutMs: 5000,
    breaker: false,
    denyCache: false,
  });
}

const remainingOf = (d: { results: readonly { remaining: number }[] }) => d.results.map((r) => r.remaining);

describe('shadow policies on Redis', () => {
  it('a check denied only by a shadow policy is one script call that charges the enforced policies', async () => {
    const limiter = limiterOn('sh1');
    const first = await limiter.check({ identity: 'tenant' });
    expect(first).toMatchObject({ allowed: true, shadowed: false });
    expect(remainingOf(first)).toEqual([15, 2, 0]);
    const shadowed = await limiter.check({ identity: 'tenant' });
    expect(shadowed).toMatchObject({ allowed: true, shadowed: true, outcome: 'allowed' });
    expect(shadowed.results.map((r) => [r.policy, r.allowed])).toEqual([
      ['payments', true],
      ['transfers', true],
      ['probe', false],
    ]);
    expect(remainingOf(shadowed)).toEqual([10, 1, 0]);
    expect(await scriptCalls()).toBe(2);
    // Redis holds what the replies said: the enforced policies charged twice, the probe once.
    const peeked = await limiter.peek({ identity: 'tenant' });
    expect(remainingOf(peeked)).toEqual([10, 1, 0]);
  });

  it('an idempotent check denied only by a shadow policy keeps one record key; its retry replays and charges nothing', async () => {
    const limiter = limiterOn('sh2');
    await limiter.check({ identity: 'tenant' }); // the probe is now full
    await redis.admin.config('RESETSTAT');
    const first = await limiter.check({ identity: 'tenant', requestId: 'transfer-7' });
    expect(first).toMatchObject({ allowed: true, shadowed: true });
    expect(remainingOf(first)).toEqual([10, 1, 0]);
    expect(await scriptCalls()).toBe(1);
    const records = (await redis.admin.keys('sh2:*')).filter((k) => k.includes(':~'));
    expect(records).toHaveLength(1);
    expect(records[0]).toContain(':~rid:');
    const retry = await limiter.check({ identity: 'tenant', requestId: 'transfer-7' });
    expect(retry).toEqual(first);
    expect(await scriptCalls()).toBe(2);
    expect(remainingOf(await limiter.peek({ identity: 'tenant' }))).toEqual([10, 1, 0]);
    expect((await redis.admin.keys('sh2:*')).filter((k) => k.includes(':~'))).toEqual(records);
  });
});
