/** `@sluice/core/node` createRedisStore: from a URL, from a client, and its input checks. */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLimiter } from '../../packages/core/src/limiter/create-limiter.js';
import { createRedisStore } from '../../packages/core/src/node/ioredis.js';
import { RedisStore } from '../../packages/core/src/stores/redis-store.js';
import { freePort } from '../support/free-port.js';
import { type RedisProcess, startRedis } from '../support/redis-server.js';

let redis: RedisProcess;

beforeAll(async () => {
  redis = await startRedis();
});

afterAll(async () => {
  await redis?.stop();
});

describe('createRedisStore', () => {
  it('builds an ioredis client from a URL, owns it and quits it on close', async () => {
    const store = createRedisStore(redis.url);
    expect(store).toBeInstanceOf(RedisStore);
    // A generous deadline: this test is about the client, not about latency on a busy machine.
    const limiter = createLimiter({
      policies: [{ name: 'one', limit: 1, window: '1m' }],
      store,
      timeoutMs: 5000,
    });
    expect((await limiter.check({ identity: 'a' })).allowed).toBe(true);
    expect(await limiter.check({ identity: 'a' })).toMatchObject({ allowed: false, source: 'store' });
    const ended = new Promise((r) => (store.client as Redis).once('end', r));
    await store.close();
    await ended;
    expect((store.client as Redis).status).toBe('end');
  });

  it('wraps a client it is given and leaves it open', async () => {
    const client = new Redis(redis.port, '127.0.0.1');
    const store = createRedisStore(client);
    expect(store.client).toBe(client);
    await store.close();
    expect(await client.ping()).toBe('PONG');
    client.disconnect();
  });

  it('reports connection errors to onError instead of an unhandled error event', async () => {
    const port = await freePort();
    const errors: Error[] = [];
    const store = createRedisStore(`redis://127.0.0.1:${port}`, {
      onError: (e) => errors.push(e),
      redisOptions: { retryStrategy: () => null },
    });
    const limiter = createLimiter({
      policies: [{ name: 'strict', limit: 1, window: '1m' }],
      store,
      timeoutMs: 200,
    });
    expect(await limiter.check({ identity: 'a' })).toMatchObject({ allowed: false, outcome: 'unavailable' });
    expect(errors.length).toBeGreaterThan(0);
    (store.client as Redis).disconnect();
  });

  it.each([
    ['http://127.0.0.1:6379', 'createRedisStore: the URL must start with redis:// or rediss://'],
    [{ clusterNodes: [] }, 'createRedisStore: "clusterNodes" must list at least one host:port'],
    [
      { clusterNodes: ['localhost'] },
      'createRedisStore: "clusterNodes" entries must look like host:port, got "localhost"',
    ],
    [
      42,
      'createRedisStore: expected a redis:// URL, { clusterNodes: [...] }, an ioredis client or a node-redis client',
    ],
  ])('rejects %j', (target, message) => {
    expect(() => createRedisStore(target as never)).toThrow(new TypeError(message));
  });
});
