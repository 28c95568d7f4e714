import { afterAll, beforeAll, describe, it } from 'vitest';
import { type RedisProcess, startRedis } from '../support/redis-server.js';
import {
  buildResetWorker,
  expectResetsSeen,
  RESET_ROWS,
  type ResetRow,
  type ResetWorker,
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
      const delays = await expectResetsSeen(a, b, row, {
        identityPrefix: `${row}-user`,
        cachedForMs: [300, 700, 1200],
      });
      console.log(`reset seen by the other process after ${delays.join(', ')} ms (standalone Redis, ${row})`);
    }, 30_000);
  },
);
