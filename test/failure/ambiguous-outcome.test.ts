/**
 * The ambiguous outcome: the script ran in Redis and charged, but its reply arrived after the
 * deadline, so the caller saw `unavailable`. A plain retry charges a second time.
 * Shown here on a real Redis behind the fault proxy (latency longer than the deadline).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLimiter, createRedisStore } from '../cluster/core.js';
import { type FaultProxy, startFaultProxy } from '../support/fault-proxy.js';
import { type RedisProcess, startRedis } from '../support/redis-server.js';

const TIMEOUT_MS = 100;
/** One way; the command reaches Redis after this, the reply comes back after twice this. */
const LATENCY_MS = 150;

let redis: RedisProcess;
let proxy: FaultProxy;

beforeAll(async () => {
  redis = await startRedis();
  proxy = await startFaultProxy({ port: redis.port });
});
afterAll(async () => {
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
