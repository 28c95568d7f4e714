/** Connections to a test cluster (ioredis Cluster, reading from primaries), and a file's cluster fixture. */
import { Cluster } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { type RedisCluster, startRedisCluster } from '../support/redis-cluster.js';

/** Connects to `cluster` (errors are the tests' to see through the calls, not as events). */
export async function connectCluster(cluster: RedisCluster): Promise<Cluster> {
  const client = new Cluster(
    cluster.seeds.map((s) => ({ ...s })),
    { scaleReads: 'master' },
  );
  client.on('error', () => {});
  if (client.status !== 'ready') await new Promise<void>((resolve) => client.once('ready', () => resolve()));
  return client;
}

/** A test file's 3+3 cluster and its clients (read them inside tests: they exist once beforeAll ran). */
export interface ClusterFixture {
  readonly cluster: RedisCluster;
  readonly clients: readonly Cluster[];
}

/**
 * Starts a 3+3 cluster before the file's tests with `count` connections to it (`connectCluster`),
 * and after them disconnects and stops it (by PID).
 */
export function useClusterClients(count: number): ClusterFixture {
  let cluster: RedisCluster | undefined;
  const clients: Cluster[] = [];
  beforeAll(async () => {
    cluster = await startRedisCluster();
    for (let i = 0; i < count; i++) clients.push(await connectCluster(cluster));
  });
  afterAll(async () => {
    for (const client of clients) client.disconnect();
    await cluster?.stop();
  });
  return {
    get cluster() {
      if (cluster === undefined) throw new Error('useClusterClients: the cluster starts in beforeAll');
      return cluster;
    },
    clients,
  };
}
