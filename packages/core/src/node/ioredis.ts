/**
 * Builds a `RedisStore` on ioredis (5 or 6, an optional peer dependency). Node only: import it
 * from `@sluice/core/node`.
 */
import { Cluster, type ClusterOptions, Redis, type RedisOptions } from 'ioredis';
import type { NodeRedisLike } from '../redis/node-redis.js';
import { ioredisTransport } from '../redis/transports/ioredis.js';
import { ioredisClusterTransport } from '../redis/transports/ioredis-cluster.js';
import { nodeRedisTransport } from '../redis/transports/node-redis.js';
import { RedisStore, type RedisStoreOptions } from '../stores/redis-store.js';
import type { Clock, EvalClient } from '../types.js';

/** Where the store connects: a `redis://` URL, Cluster seed nodes, or a client you built. */
export type RedisTarget = string | { readonly clusterNodes: readonly string[] } | EvalClient | NodeRedisLike;

/** Options of `createRedisStore`. */
export interface CreateRedisStoreOptions
  extends Pick<RedisStoreOptions, 'maxBatch' | 'maxBatchWaitMs' | 'batchAcrossSlots'> {
  /** Extra ioredis options for a client built from a URL. */
  readonly redisOptions?: RedisOptions;
  /** Extra ioredis Cluster options for a client built from seed nodes. */
  readonly clusterOptions?: ClusterOptions;
  /** Tests only: explicit time passed to the script. */
  readonly clock?: Clock;
  /**
   * Connection errors of a client built here (the limiter already turns failed calls into
   * `unavailable`). Default: ignored, so ioredis prints no "Unhandled error event".
   */
  readonly onError?: (error: Error) => void;
}

/**
 * Client defaults suited to a limiter: every call has its own deadline in the limiter, so a
 * command is retried at most once by ioredis, and a command that never gets an answer (a Redis
 * that accepts connections but stays silent) is dropped after 5 s instead of waiting forever
 * in the client's queue.
 */
const LIMITER_REDIS_OPTIONS: RedisOptions = { maxRetriesPerRequest: 1, commandTimeout: 5000 };

/**
 * Batches are sent once the current event-loop turn's I/O is handled: the checks of every
 * request that arrived in that turn share one script call.
 */
const scheduleFlush = (flush: () => void): void => {
  setImmediate(flush);
};

/** Parses `host:port` (IPv6 as `[::1]:6379`). */
function parseNode(node: string): { host: string; port: number } {
  const match = /^\[?([^\]]+?)\]?:(\d+)$/.exec(node.trim());
  const port = Number(match?.[2]);
  if (!match || !Number.isInteger(port) || port <= 0 || port > 65_535) {
    throw new TypeError(
      `createRedisStore: "clusterNodes" entries must look like host:port, got ${JSON.stringify(node)}`,
    );
  }
  return { host: match[1] ?? '', port };
}

function isEvalClient(value: unknown): value is EvalClient {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as EvalClient).evalsha === 'function' &&
    typeof (value as EvalClient).eval === 'function'
  );
}

function isNodeRedis(value: unknown): value is NodeRedisLike {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as NodeRedisLike).evalSha === 'function' &&
    typeof (value as NodeRedisLike).eval === 'function'
  );
}

/**
 * A `RedisStore` for a URL (`redis://` or `rediss://`), Redis Cluster seed nodes
 * (`{ clusterNodes: ['127.0.0.1:7000', ...] }`), or an existing client (ioredis `Redis` or
 * `Cluster`, a connected node-redis client or cluster client, or any `EvalClient`). Clients built here belong to the store: `store.close()` quits them.
 */
export function createRedisStore(target: RedisTarget, options: CreateRedisStoreOptions = {}): RedisStore {
  const clock = options.clock;
  const batching = {
    maxBatch: options.maxBatch,
    maxBatchWaitMs: options.maxBatchWaitMs,
    batchAcrossSlots: options.batchAcrossSlots,
    scheduleFlush,
  };
  const onError = options.onError ?? (() => {});
  if (typeof target === 'string') {
    if (!/^rediss?:\/\//.test(target)) {
      throw new TypeError('createRedisStore: the URL must start with redis:// or rediss://');
    }
    const client = new Redis(target, { ...LIMITER_REDIS_OPTIONS, ...options.redisOptions });
    client.on('error', onError);
    return new RedisStore({ transport: ioredisTransport(client), clock, ownsClient: true, ...batching });
  }
  // A client of this ioredis is known for what it is; any other EvalClient says it itself.
  if (target instanceof Cluster) {
    return new RedisStore({ transport: ioredisClusterTransport(target), clock, ...batching });
  }
  if (target instanceof Redis)
    return new RedisStore({ transport: ioredisTransport(target), clock, ...batching });
  if (isEvalClient(target)) return new RedisStore({ client: target, clock, ...batching });
  if (isNodeRedis(target))
    return new RedisStore({ transport: nodeRedisTransport(target), clock, ...batching });
  if (
    typeof target === 'object' &&
    target !== null &&
    Array.isArray((target as { clusterNodes?: unknown }).clusterNodes)
  ) {
    const nodes = (target as { clusterNodes: readonly string[] }).clusterNodes;
    if (nodes.length === 0)
      throw new TypeError('createRedisStore: "clusterNodes" must list at least one host:port');
    const client = new Cluster(nodes.map(parseNode), {
      ...options.clusterOptions,
      redisOptions: { ...LIMITER_REDIS_OPTIONS, ...options.clusterOptions?.redisOptions },
    });
    client.on('error', onError);
    return new RedisStore({
      transport: ioredisClusterTransport(client),
      clock,
      ownsClient: true,
      ...batching,
    });
  }
  throw new TypeError(
    'createRedisStore: expected a redis:// URL, { clusterNodes: [...] }, an ioredis client or a node-redis client',
  );
}
