/**
 * The transport for node-redis (the `redis` package, v4 and v5): a standalone client
 * (`createClient()`) or a cluster client (`createCluster()`), which routes each call by its
 * first key, so one call stays in one hash slot there. Structural types only. Web-standard.
 */
import { assertNodeRedisClient, type NodeRedisLike } from '../node-redis.js';
import { defineTransport, type ScriptTransport } from '../transport.js';

/** True for a node-redis cluster client: it lists its primaries; a standalone client does not. */
export function isNodeRedisCluster(client: NodeRedisLike): boolean {
  return 'masters' in client;
}

/**
 * A transport over a connected node-redis client or cluster client. On a cluster client only
 * checks whose keys share a hash slot share a call; on a standalone client any may. `close()`
 * (for a store that owns the client) closes it.
 *
 * @example new RedisStore({ transport: nodeRedisTransport(await createCluster({ rootNodes }).connect()) })
 */
export function nodeRedisTransport(client: NodeRedisLike): ScriptTransport {
  assertNodeRedisClient(client, 'nodeRedisTransport');
  const closable = client as { close?: () => Promise<unknown>; quit?: () => Promise<unknown> };
  return defineTransport({
    singleSlot: isNodeRedisCluster(client),
    pipelines: true,
    client,
    evalsha: (sha1, keys, args) =>
      client.evalSha(sha1, { keys: keys as string[], arguments: args as string[] }),
    eval: (source, keys, args) =>
      client.eval(source, { keys: keys as string[], arguments: args as string[] }),
    async close() {
      if (typeof closable.close === 'function') await closable.close();
      else if (typeof closable.quit === 'function') await closable.quit();
    },
  });
}
