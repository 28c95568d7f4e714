/**
 * The ambiguous outcome: the script ran in Redis and charged, but its reply arrived after the
 * deadline, so the caller saw `unavailable`. A plain retry charges a second time. A concurrency
 * slot is the exception: the late reply's slot is released when it arrives, so no slot is held by
 * a check nobody admitted, and a retry with a request id holds a slot of its own.
 * Shown here on a real Redis behind the fault proxy (latency longer than the deadline).
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLimiter, createRedisStore, identityTag, type PolicyInput } from '../cluster/core.js';
import { type FaultProxy, startFaultProxy } from '../support/fault-proxy.js';
import { type RedisProcess, startRedis } from '../support/redis-server.js';

const TIMEOUT_MS = 100;
/** One way; the command reaches Redis after this, the reply comes back after twice this. */
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

describe('ambiguous outcome', () => {
  it('a check that timed out may still have been charged; a plain retry charges again', async () => {
    const store = createRedisStore(proxy.url);
    const limiter = createLimiter({
      policies: [{ name: 'amb', algorithm: 'token-bucket', limit: 5, window: '1h', failMode: 'closed' }],
      prefix: 'amb',
      store,
      timeoutMs: TIMEOUT_MS,
      breaker: false,
    });
    // Connected and charged once.
    for (let i = 0; i < 50 && (await limiter.check({ identity: 'warm' })).source !== 'store'; i++)
      await sleep(50);
    expect((await limiter.check({ identity: 't' })).remaining).toBe(4);

    proxy.setLatency(LATENCY_MS);
    const lost = await limiter.check({ identity: 't' });
    expect(lost.outcome).toBe('unavailable');
    // Let the delayed command reach Redis and its reply come back (and be dropped).
    await sleep(3 * LATENCY_MS);
    proxy.setLatency(0);
    await sleep(2 * LATENCY_MS);

    // Redis charged it: the caller was told `unavailable`, yet one unit is gone.
    expect((await limiter.peek({ identity: 't' })).remaining).toBe(3);
    // The caller retries the same request: charged a second time.
    const retry = await limiter.check({ identity: 't' });
    expect(retry.allowed).toBe(true);
    expect(retry.remaining).toBe(2);
    await store.close();
  });
});

const IN_FLIGHT: PolicyInput = { name: 'in-flight', algorithm: 'concurrency', limit: 1, leaseMs: '5s' };

function limiterOn(prefix: string, url: string, policies: PolicyInput[] = [IN_FLIGHT]) {
  const store = createRedisStore(url);
  const limiter = createLimiter({ policies, prefix, store, timeoutMs: TIMEOUT_MS, breaker: false });
  return { store, limiter };
}

/** Until a check of an identity of its own reaches the store (the connection is up, the script loaded). */
async function connected(limiter: ReturnType<typeof limiterOn>['limiter']): Promise<void> {
  for (let i = 0; i < 50; i++) {
    const warm = await limiter.check({ identity: `warm-${i}` });
    if (warm.source === 'store') {
      await limiter.release(warm);
      return;
    }
    await sleep(50);
  }
}

describe('a late answer holds no slot', () => {
  it('the slot a check answered unavailable took is released when its answer arrives', async () => {
    const slow = limiterOn('late-a', proxy.url);
    const other = limiterOn('late-a', `redis://127.0.0.1:${redis.port}`);
    await connected(slow.limiter);
    await connected(other.limiter);
    proxy.setLatency(LATENCY_MS);
    const missed = await slow.limiter.check({ identity: 't' });
    expect([missed.outcome, missed.source]).toEqual(['unavailable', 'fail-closed']);
    // The answer arrives after the deadline (the store took the slot meanwhile), then the release.
    await sleep(4 * LATENCY_MS);
    proxy.setLatency(0);
    await sleep(2 * LATENCY_MS);
    expect(await direct.zcard(`${identityTag('late-a', 't')}:in-flight`)).toBe(0);
    const next = await other.limiter.check({ identity: 't' });
    expect([next.allowed, next.source]).toEqual([true, 'store']);
    await other.limiter.release(next);
    await slow.store.close();
    await other.store.close();
  });

  it('a late answer that denied, or took no slot, releases nothing', async () => {
    const slow = limiterOn('late-b', proxy.url, [
      IN_FLIGHT,
      { name: 'rate', algorithm: 'fixed-window', limit: 1, window: '1m' },
    ]);
    const other = limiterOn('late-b', `redis://127.0.0.1:${redis.port}`, [IN_FLIGHT]);
    await connected(slow.limiter);
    const held = await other.limiter.check({ identity: 't' });
    expect(held.allowed).toBe(true);
    proxy.setLatency(LATENCY_MS);
    // Denied by the slot held (late): nothing taken, nothing released; the holder keeps its slot.
    expect((await slow.limiter.check({ identity: 't' })).outcome).toBe('unavailable');
    await sleep(4 * LATENCY_MS);
    proxy.setLatency(0);
    await sleep(2 * LATENCY_MS);
    expect(await direct.zcard(`${identityTag('late-b', 't')}:in-flight`)).toBe(1);
    expect((await other.limiter.check({ identity: 't' })).allowed).toBe(false);
    await other.limiter.release(held);
    await slow.store.close();
    await other.store.close();
  });

  it('the retry (requestId) of a check answered unavailable is admitted only with a slot of its own', async () => {
    const slow = limiterOn('late-c', proxy.url);
    const other = limiterOn('late-c', `redis://127.0.0.1:${redis.port}`);
    await connected(slow.limiter);
    proxy.setLatency(LATENCY_MS);
    expect((await slow.limiter.check({ identity: 't', requestId: 'r' })).outcome).toBe('unavailable');
    await sleep(4 * LATENCY_MS);
    proxy.setLatency(0);
    await sleep(2 * LATENCY_MS);
    // The store recorded an admission; its slot was released on arrival. Another check holds the
    // one slot now: the retry is not admitted. Once it is free, the retry takes it.
    const held = await other.limiter.check({ identity: 't' });
    expect(held.allowed).toBe(true);
    const early = await slow.limiter.check({ identity: 't', requestId: 'r' });
    expect([early.allowed, early.policy]).toEqual([false, 'in-flight']);
    await other.limiter.release(held);
    const retry = await slow.limiter.check({ identity: 't', requestId: 'r' });
    expect([retry.allowed, retry.source, slow.limiter.hasSlots(retry)]).toEqual([true, 'store', true]);
    expect((await other.limiter.check({ identity: 't' })).allowed).toBe(false);
    await slow.limiter.release(retry);
    await slow.store.close();
    await other.store.close();
  });
});
