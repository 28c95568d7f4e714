/**
 * Cancelled waits give every unit back on both stores alike: MemoryStore, and RedisStore on a real
 * redis-server with Redis TIME (its clock and the limiter's differ by a round trip and whole ms).
 */
import { describe, expect, it } from 'vitest';
import { useRedis } from '../../../../test/support/redis-fixture.js';
import { MemoryStore } from '../stores/memory-store.js';
import { RedisStore } from '../stores/redis-store.js';
import type { PolicyInput, Store } from '../types.js';
import { createLimiter } from './create-limiter.js';

const redis = useRedis();
let run = 0;

const QUEUED: PolicyInput = {
  name: 'queued',
  algorithm: 'token-bucket',
  burst: 2,
  rate: '2/s',
  maxWaitMs: 10_000,
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each([
  ['MemoryStore', (): Store => new MemoryStore()],
  ['RedisStore', (): Store => new RedisStore({ client: redis.client })],
])('%s: close() cancels every wait', (_name, storeOf) => {
  it.each([50, 300])(
    'gives back every unit of 8 cancelled waits (closed %i ms after they wait)',
    async (afterMs) => {
      const store = storeOf();
      const prefix = `cw${++run}`;
      const limiter = createLimiter({ store, policies: [QUEUED], prefix });
      const admitted = await Promise.all([0, 1].map(() => limiter.check({ identity: 'a' })));
      expect(admitted.map((d) => d.allowed)).toEqual([true, true]);
      // The bucket is empty: its next unit comes this long after the peek was answered, at the latest.
      const empty = await limiter.peek({ identity: 'a' });
      const emptyAtMs = Date.now();
      // Eight more queue behind them, 500 ms apart.
      const waits = Array.from({ length: 8 }, () => limiter.check({ identity: 'a' }));
      // Once all eight wait (answered by the store), some time passes before the close.
      for (let i = 0; i < 500 && limiter.counters.overload.waiting.get('queued') !== 8; i++) await sleep(5);
      expect(limiter.counters.overload.waiting.get('queued')).toBe(8);
      await sleep(afterMs);
      await limiter.close();
      expect((await Promise.all(waits)).map((d) => d.allowed)).toEqual(Array(8).fill(false));
      // All given back: the next unit comes when the two admitted alone let it (whole ms, rounded up).
      const other = createLimiter({ store, policies: [QUEUED], prefix });
      const askedAtMs = Date.now();
      const next = await other.peek({ identity: 'a' });
      expect(next.retryAfterMs).toBeLessThanOrEqual(empty.retryAfterMs - (askedAtMs - emptyAtMs) + 2);
    },
  );
});
