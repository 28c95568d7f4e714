/** One ioredis Cluster connection to a test cluster, reading from primaries, resolved once ready. */
import { Cluster } from 'ioredis';
import type { RedisCluster } from '../support/redis-cluster.js';

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
