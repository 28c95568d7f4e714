/** The store the example app uses, chosen by REDIS_URL / REDIS_CLUSTER_NODES. */
import { MemoryStore, type Store } from '@sluice/core';
import { createRedisStore } from '@sluice/core/node';

/** What `storeFromEnv` chose, for the start-up line. */
export interface StoreChoice {
  readonly store: Store;
  readonly description: 'memory' | 'redis' | 'redis-cluster';
}

/**
 * `REDIS_CLUSTER_NODES` (`host:port,host:port`) selects Redis Cluster, `REDIS_URL` a standalone
 * Redis, and neither the in-process memory store.
 */
export function storeFromEnv(env: NodeJS.ProcessEnv): StoreChoice {
  const clusterNodes = (env.REDIS_CLUSTER_NODES ?? '')
    .split(',')
    .map((node) => node.trim())
    .filter((node) => node !== '');
  if (clusterNodes.length > 0)
    return { store: createRedisStore({ clusterNodes }), description: 'redis-cluster' };
  const url = env.REDIS_URL?.trim();
  if (url) return { store: createRedisStore(url), description: 'redis' };
  return { store: new MemoryStore(), description: 'memory' };
}
