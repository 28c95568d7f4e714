/**
 * 4 OS processes on the real 3+3 Redis Cluster: a concurrency limit holds at every instant,
 * waiting requests are admitted at their turns and never beyond the rate, and the slots of a
 * SIGKILLed process come back when their lease ends (test/core/overload-fleet.ts).
 */
import { describeFleet } from '../core/overload-fleet.js';
import { startRedisCluster } from '../support/redis-cluster.js';

describeFleet('4 processes on the 3+3 Cluster', async () => {
  const cluster = await startRedisCluster();
  return { target: `cluster:${cluster.nodesEnv}`, stop: () => cluster.stop() };
});
