/**
 * The transport for an ioredis `Redis` (standalone, v5 and v6): any keys may share a call.
 * Structural types only, so it imports nothing from ioredis. Web-standard.
 */
import type { EvalClient } from '../../types.js';
import { defineTransport, type ScriptTransport, type TransportCommands } from '../transport.js';

/** The part of an ioredis `Redis` or `Cluster` the transports call. */
export interface IoredisLike extends EvalClient {
  quit?(): Promise<unknown>;
}

/** The ioredis commands of a transport: `evalsha(sha1, numKeys, ...keys, ...args)`. */
export function ioredisCommands(client: IoredisLike): Omit<TransportCommands, 'singleSlot'> {
  return {
    client,
    // ioredis's Redis and Cluster pipeline on their connections; an object that only offers
    // evalsha/eval (Redis over HTTP, an adapter) may not.
    pipelines: typeof (client as { pipeline?: unknown }).pipeline === 'function',
    evalsha: (sha1, keys, args) => client.evalsha(sha1, keys.length, ...keys, ...args),
    eval: (source, keys, args) => client.eval(source, keys.length, ...keys, ...args),
    async close(): Promise<void> {
      if (typeof client.quit === 'function') await client.quit();
    },
  };
}

/**
 * A transport over an ioredis `Redis` (or any client with ioredis's `evalsha`/`eval` in front of
 * ONE Redis server): checks of every identity may share one script call.
 *
 * @example new RedisStore({ transport: ioredisTransport(new Redis(url)) })
 */
export function ioredisTransport(client: IoredisLike): ScriptTransport {
  return defineTransport({ ...ioredisCommands(client), singleSlot: false });
}
