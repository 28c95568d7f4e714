/**
 * The transport for an ioredis `Cluster` (v5 and v6): one call stays in one hash slot, and
 * ioredis routes it to the primary of that slot. Structural types only. Web-standard.
 */
import { defineTransport, type ScriptTransport } from '../transport.js';
import { type IoredisLike, ioredisCommands } from './ioredis.js';

/**
 * A transport over an ioredis `Cluster` (or any client with ioredis's `evalsha`/`eval` that
 * routes each call by its keys' slot): only checks whose keys share a hash slot share a call.
 *
 * @example new RedisStore({ transport: ioredisClusterTransport(new Cluster(seeds)) })
 */
export function ioredisClusterTransport(client: IoredisLike): ScriptTransport {
  return defineTransport({ ...ioredisCommands(client), singleSlot: true });
}
