/**
 * The idempotency key (`descriptor.requestId`): a retried check returns the first decision
 * instead of charging twice, including when the first reply was lost to the deadline (the
 * ambiguous outcome). The record lives in the identity's slot and expires.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLimiter, createRedisStore, RedisStore } from '../cluster/core.js';
import { type FaultProxy, startFaultProxy } from '../support/fault-proxy.js';
import { type RedisProcess, startRedis } from '../support/redis-server.js';

const TIMEOUT_MS = 100;
const LATENCY_MS = 150;

let redis: RedisProcess;
let proxy: FaultProxy;
let direct: Redis;

beforeAll(async () => {
  redis = await startRedis();
  proxy = await startFaultProxy({ port: redis.port });
  direct = new Redis({ host: '127.0.0.1', port: redis.port });
});
afterAll(async () => {
  direct?.disconnect();
  await proxy?.close();
  await redis?.stop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function limiterOn(prefix: string, store: RedisStore, ttlMs?: number) {
  return createLimiter({
    policies: [{ name: 'idem', algorithm: 'token-bucket', limit: 5, window: '1h', failMode: 'closed' }],
    prefix,
    store,
    timeoutMs: TIMEOUT_MS,
    breaker: false,
    ...(ttlMs === undefined ? {} : { idempotency: { ttlMs } }),
  });
}

async function connected(limiter: ReturnType<typeof limiterOn>): Promise<void> {
  for (let i = 0; i < 50 && (await limiter.check({ identity: 'warm' })).source !== 'store'; i++)
    await sleep(50);
}

describe('idempotency key', () => {
  it('a retried check with the same requestId returns the first decision and charges once', async () => {
    const store = createRedisStore(proxy.url);
    const limiter = limiterOn('idem-a', store);
    await connected(limiter);
    const first = await limiter.check({ identity: 't', requestId: 'req-1' });
    const again = await limiter.check({ identity: 't', requestId: 'req-1' });
    expect(first.allowed).toBe(true);
    expect(first.remaining).toBe(4);
    expect([again.allowed, again.outcome, again.remaining]).toEqual([true, 'allowed', 4]);
    expect((await limiter.peek({ identity: 't' })).remaining).toBe(4);
    // Another request id is another request.
    expect((await limiter.check({ identity: 't', requestId: 'req-2' })).remaining).toBe(3);
    // The same request id for another identity is another request too.
    expect((await limiter.check({ identity: 'u', requestId: 'req-1' })).remaining).toBe(4);
    await store.close();
  });

  it('a request id replays only for the same identity (kind included) and the same policy set', async () => {
    const store = createRedisStore(proxy.url);
    const limiter = createLimiter({
      policies: [
        { name: 'one', algorithm: 'token-bucket', limit: 2, window: '1h' },
        { name: 'two', algorithm: 'token-bucket', limit: 2, window: '1h' },
      ],
      prefix: 'idem-scope',
      store,
      timeoutMs: 2000,
      breaker: false,
    });
    const key = { kind: 'key', value: '127.0.0.1' } as const;
    const ip = { kind: 'ip', value: '127.0.0.1' } as const;
    const first = await limiter.check({ identity: key, requestId: 'same', policies: ['one'] });
    expect([first.source, first.remaining]).toEqual(['store', 1]);
    // The same id from the client 127.0.0.1 is its own request, in its own bucket.
    expect((await limiter.check({ identity: ip, requestId: 'same', policies: ['one'] })).remaining).toBe(1);
    // The same id and identity on another policy set is charged there, not replayed from `one`.
    const other = await limiter.check({ identity: key, requestId: 'same', policies: ['two'] });
    expect([other.policy, other.remaining]).toEqual(['two', 1]);
    const both = await limiter.check({ identity: key, requestId: 'same' });
    expect([both.source, both.results.map((r) => r.remaining)]).toEqual(['store', [0, 0]]);
    // Same id, identity and policy set: replayed, nothing charged.
    expect(await limiter.check({ identity: key, requestId: 'same', policies: ['one'] })).toEqual(first);
    expect((await limiter.peek({ identity: key })).results.map((r) => r.remaining)).toEqual([0, 0]);
    expect((await limiter.peek({ identity: ip })).results.map((r) => r.remaining)).toEqual([1, 2]);
    await store.close();
  });

  it('the ambiguous outcome resolved: the first reply lost to the deadline, the retry returns it without a second charge', async () => {
    const store = createRedisStore(proxy.url);
    const limiter = limiterOn('idem-b', store);
    await connected(limiter);
    proxy.setLatency(LATENCY_MS);
    const lost = await limiter.check({ identity: 't', requestId: 'req-lost' });
    expect(lost.outcome).toBe('unavailable');
    await sleep(3 * LATENCY_MS);
    proxy.setLatency(0);
    await sleep(2 * LATENCY_MS);
    expect((await limiter.peek({ identity: 't' })).remaining).toBe(4);
    const retry = await limiter.check({ identity: 't', requestId: 'req-lost' });
    expect([retry.allowed, retry.source, retry.remaining]).toEqual([true, 'store', 4]);
    expect((await limiter.peek({ identity: 't' })).remaining).toBe(4);
    await store.close();
  });

  it('a denied first decision is replayed as denied; the record sits in the identity slot and expires', async () => {
    // The script's clock is the store's, moved by hand: the record expires at its time +
    // ttlMs by that clock (lua/decide.lua), so no sleeping for it.
    let nowMs = 1_800_000_000_000;
    const client = new Redis({ host: '127.0.0.1', port: proxy.port });
    const store = new RedisStore({ client, clock: () => nowMs, ownsClient: true });
    const limiter = limiterOn('idem-c', store, 400);
    await connected(limiter);
    for (let i = 0; i < 5; i++) expect((await limiter.check({ identity: 't' })).allowed).toBe(true);
    const denied = await limiter.check({ identity: 't', requestId: 'req-d' });
    expect(denied.outcome).toBe('over_limit');
    expect((await limiter.check({ identity: 't', requestId: 'req-d' })).outcome).toBe('over_limit');

    const first = await limiter.check({ identity: 'v', requestId: 'req-ttl' });
    // 400 ms later by the store's clock the record still lives: a replay, no charge.
    nowMs += 400;
    expect(await limiter.check({ identity: 'v', requestId: 'req-ttl' })).toMatchObject({
      allowed: true,
      remaining: first.remaining,
    });
    const keys = await direct.keys('idem-c:*');
    const records = keys.filter((k) => !k.endsWith(':idem'));
    expect(records.length).toBeGreaterThanOrEqual(1);
    for (const key of records) {
      // Same hash tag as the identity's policy keys: one Cluster slot.
      expect(key.slice(0, key.indexOf('}') + 1)).toMatch(/^idem-c:\{.+\}$/);
      const pttl = await direct.pttl(key);
      expect(pttl).toBeGreaterThan(0);
      expect(pttl).toBeLessThanOrEqual(400);
    }
    // 401 ms later by the store's clock: expired, the same request id is now a new request and is charged.
    nowMs += 1;
    const later = await limiter.check({ identity: 'v', requestId: 'req-ttl' });
    expect(later.remaining).toBe(first.remaining - 1);
    await store.close();
  });
});
