/**
 * 4 OS processes on the real 3+3 Redis Cluster: a concurrency limit holds at every instant,
 * waiting requests are admitted at their turns and never beyond the rate, and the slots of a
 * SIGKILLed process come back when their lease ends (test/core/overload-fleet.ts).
 */
import { afterAll, beforeAll, describe, test } from 'vitest';
import type { Worker } from '../core/contention-fleet.js';
import {
  expectKilledHolderReclaimed,
  expectNeverMoreInFlight,
  expectQueuedFleet,
  startFleet,
  stopFleet,
} from '../core/overload-fleet.js';
import { type RedisCluster, startRedisCluster } from '../support/redis-cluster.js';

let cluster: RedisCluster;
let workers: Worker[] = [];

beforeAll(async () => {
  cluster = await startRedisCluster();
  workers = await startFleet(`cluster:${cluster.nodesEnv}`);
});
afterAll(async () => {
  await stopFleet(workers);
  await cluster?.stop();
});

describe('4 processes on the 3+3 Cluster', () => {
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
