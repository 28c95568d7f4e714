import { afterAll, beforeAll, describe, it } from 'vitest';
import {
  buildResetWorker,
  expectResetsSeen,
  RESET_ROWS,
  type ResetRow,
  type ResetWorker,
  startResetWorker,
} from '../core/reset-across-instances.js';
import { type RedisCluster, startRedisCluster } from '../support/redis-cluster.js';

let cluster: RedisCluster;
let a: ResetWorker;
let b: ResetWorker;

beforeAll(async () => {
  const [started, script] = await Promise.all([startRedisCluster(), buildResetWorker()]);
  cluster = started;
  const env = { SLUICE_RESET_CLUSTER: cluster.nodesEnv };
  [a, b] = await Promise.all([startResetWorker(script, env), startResetWorker(script, env)]);
}, 120_000);

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await cluster?.stop();
});

describe.each(Object.keys(RESET_ROWS) as ResetRow[])('a reset on one instance, Redis Cluster: %s', (row) => {
  it('reaches the in-process denials of another process within a second, whatever slot the identity is in', async () => {
    // Identities spread over the three primaries' slots.
    const cachedForMs = [300, 700, 1200, 500];
    const delays = await expectResetsSeen(a, b, row, { identityPrefix: `${row}-tenant`, cachedForMs });
    console.log(`reset seen by the other process after ${delays.join(', ')} ms (Redis Cluster, ${row})`);
  }, 60_000);
});
