/**
 * 4 OS processes on one real Redis: a concurrency limit holds at every instant, waiting
 * requests are admitted at their turns and never beyond the rate, and the slots of a SIGKILLed
 * process come back when their lease ends (overload-fleet.ts).
 */
import { afterAll, beforeAll, describe, test } from 'vitest';
import { type RedisProcess, startRedis } from '../support/redis-server.js';
import type { Worker } from './contention-fleet.js';
import {
  expectKilledHolderReclaimed,
  expectNeverMoreInFlight,
  expectQueuedFleet,
  startFleet,
  stopFleet,
} from './overload-fleet.js';

let redis: RedisProcess;
let workers: Worker[] = [];

beforeAll(async () => {
  redis = await startRedis();
  workers = await startFleet(redis.url);
});
afterAll(async () => {
  await stopFleet(workers);
  await redis?.stop();
});

describe('4 processes on one Redis', () => {
  test('in-flight (limit 3): never more than 3 in flight for one identity at any moment', async () => {
    await expectNeverMoreInFlight(workers);
  });

  test('queued (burst 5, 10/s, waits up to 1 s): never beyond the rate over any interval, spread, none early', async () => {
    await expectQueuedFleet(workers);
  });

  test('SIGKILL of a process holding 3 slots: reclaimed when the lease (1 s) ends, not before', async () => {
    await expectKilledHolderReclaimed(workers);
  });
});
