/**
 * The transport for any `EvalClient` (ioredis's argument style): what `new RedisStore({ client })`
 * uses, choosing the slot rule from what the client says of itself. Web-standard.
 */
import type { EvalClient } from '../../types.js';
import type { ScriptTransport } from '../transport.js';
import { ioredisTransport } from './ioredis.js';
import { ioredisClusterTransport } from './ioredis-cluster.js';

/**
 * The transport for a client given as `client`: an ioredis `Redis` (or another client that says
 * `isCluster: false`, as `fromNodeRedis` does for a standalone client) may batch across slots;
 * an ioredis `Cluster`, a node-redis cluster client, or a client that says nothing keeps each
 * call in one slot. `batchAcrossSlots`, when set, decides instead.
 */
export function evalClientTransport(client: EvalClient, batchAcrossSlots?: boolean): ScriptTransport {
  const acrossSlots = batchAcrossSlots ?? (client as { isCluster?: unknown }).isCluster === false;
  return acrossSlots ? ioredisTransport(client) : ioredisClusterTransport(client);
}
