/**
 * A private 3+3 Redis Cluster for one test file, with `connections` ioredis Cluster clients (one
 * per simulated instance). Registers beforeAll/afterAll, as `useRedis` does for one server.
 */
import type { Cluster } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { connectCluster, type RedisCluster, startRedisCluster } from './redis-cluster.js';

export interface ClusterFixture {
  readonly cluster: RedisCluster;
  /** The clients, connected in beforeAll (empty before it). */
  readonly clients: readonly Cluster[];
}

/** Starts the cluster and connects the clients before the file's tests; stops it (by PID) after them. */
export function useRedisCluster(connections: number): ClusterFixture {
  let cluster: RedisCluster | undefined;
  const clients: Cluster[] = [];
  beforeAll(async () => {
    cluster = await startRedisCluster();
    for (let i = 0; i < connections; i++) clients.push(await connectCluster(cluster));
  });
  afterAll(async () => {
    for (const client of clients) client.disconnect();
    await cluster?.stop();
  });
  return {
    get cluster() {
      if (cluster === undefined) throw new Error('useRedisCluster: the cluster starts in beforeAll');
      return cluster;
    },
    clients,
  };
}
