/**
 * ioredis 6 (RESP3 by default) drives RedisStore exactly like ioredis 5: same decisions, the
 * NOSCRIPT fallback, and createRedisStore accepts its clients as they are.
 */
import { Redis as Redis5 } from 'ioredis';
import { Redis as Redis6 } from 'ioredis6';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLimiter } from '../../packages/core/src/limiter/create-limiter.js';
import { createRedisStore } from '../../packages/core/src/node/ioredis.js';
import { RedisStore } from '../../packages/core/src/stores/redis-store.js';
import type { Algorithm, EvalClient, PolicyInput } from '../../packages/core/src/types.js';
import { type RedisProcess, startRedis } from '../support/redis-server.js';

let redis: RedisProcess;
let v5: Redis5;
let v6: Redis6;

beforeAll(async () => {
  redis = await startRedis();
  v5 = new Redis5(redis.port, '127.0.0.1');
  v6 = new Redis6(redis.port, '127.0.0.1');
});

afterAll(async () => {
  v5?.disconnect();
  v6?.disconnect();
  await redis?.stop();
});

const algorithms: Algorithm[] = ['token-bucket', 'gcra', 'sliding-window', 'fixed-window', 'sliding-log'];

describe('ioredis 6', () => {
  it('speaks RESP3 by default here', async () => {
    const hello = (await v6.call('HELLO')) as unknown[];
    const index = hello.indexOf('proto');
    expect(hello[index + 1]).toBe(3);
  });

  it.each(algorithms)('%s: the same decisions as ioredis 5, with an explicit clock', async (algorithm) => {
    const now = { t: 1_750_000_000_000 };
    const policies: PolicyInput[] = [
      { name: 'p', algorithm, limit: 3, window: '10s' },
      { name: 'q', algorithm: 'token-bucket', burst: 5, rate: '1/s' },
    ];
    const make = (client: EvalClient, prefix: string) =>
      createLimiter({
        policies,
        prefix,
        store: createRedisStore(client, { clock: () => now.t }),
        clock: () => now.t,
        timeoutMs: 5000,
        denyCache: false,
      });
    const a = make(v5, `v5-${algorithm}`);
    const b = make(v6, `v6-${algorithm}`);
    for (let i = 0; i < 12; i++) {
      now.t += [0, 700, 2500, 10][i % 4]!;
      const [x, y] = [await a.check({ identity: 'id' }), await b.check({ identity: 'id' })];
      expect(y.source).toBe('store');
      expect({ ...y.results }).toEqual({ ...x.results });
      expect([y.allowed, y.remaining, y.retryAfterMs]).toEqual([x.allowed, x.remaining, x.retryAfterMs]);
    }
  });

  it('falls back to EVAL after SCRIPT FLUSH', async () => {
    const store = new RedisStore({ client: v6 });
    const limiter = createLimiter({
      policies: [{ name: 'f', limit: 5, window: '1m' }],
      store,
      timeoutMs: 5000,
    });
    expect((await limiter.check({ identity: 'x' })).remaining).toBe(4);
    await v6.script('FLUSH');
    expect(await limiter.check({ identity: 'x' })).toMatchObject({ source: 'store', remaining: 3 });
  });
});
