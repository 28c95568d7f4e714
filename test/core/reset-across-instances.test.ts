import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisProcess, startRedis } from '../support/redis-server.js';
import {
  buildResetWorker,
  RESET_ROWS,
  type ResetRow,
  type ResetWorker,
  resetSeenAfterMs,
  seenWithinMs,
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

describe.each(Object.keys(RESET_ROWS) as ResetRow[])(
  'a reset on one instance, standalone Redis: %s',
  (row) => {
    it('reaches the in-process denials of another process within a second', async () => {
      const delays: number[] = [];
      for (const [i, cachedForMs] of [300, 700, 1200].entries()) {
        const seen = await resetSeenAfterMs(a, b, { row, identity: `${row}-user-${i}`, cachedForMs });
        expect(seen, 'A never admitted the identity B reset').toBeDefined();
        // A really was answering in-process until then.
        expect(seen!.inProcessDenials).toBeGreaterThan(0);
        delays.push(seen!.delayMs);
        // Within the 1 s maximum age of every in-process denial, to the resolution of A's checks.
        expect(seen!.delayMs).toBeLessThanOrEqual(seenWithinMs(row));
      }
      console.log(`reset seen by the other process after ${delays.join(', ')} ms (standalone Redis, ${row})`);
    }, 30_000);
  },
);
