import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisProcess, startRedis } from '../support/redis-server.js';
import {
  buildResetWorker,
  POLL_MS,
  type ResetWorker,
  resetSeenAfterMs,
  startResetWorker,
} from './reset-across-instances.js';

let redis: RedisProcess;
let a: ResetWorker;
let b: ResetWorker;

beforeAll(async () => {
  redis = await startRedis();
  const script = await buildResetWorker();
  [a, b] = await Promise.all([
    startResetWorker(script, { SLUICE_RESET_URL: redis.url }),
    startResetWorker(script, { SLUICE_RESET_URL: redis.url }),
  ]);
}, 30_000);

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await redis?.stop();
});

describe('a reset on one instance, standalone Redis', () => {
  it('reaches the cached denials of another process within a second', async () => {
    const delays: number[] = [];
    for (const [i, cachedForMs] of [300, 700, 1200].entries()) {
      const seen = await resetSeenAfterMs(a, b, `user-${i}`, cachedForMs);
      expect(seen, 'A never admitted the identity B reset').toBeDefined();
      // A really was answering from its deny cache until then.
      expect(seen!.cachedDenials).toBeGreaterThan(0);
      delays.push(seen!.delayMs);
      // Within the deny cache's 1 s maximum age, to the resolution of A's checks.
      expect(seen!.delayMs).toBeLessThanOrEqual(1000 + POLL_MS);
    }
    console.log(`reset seen by the other process after ${delays.join(', ')} ms (standalone Redis)`);
  }, 30_000);
});
