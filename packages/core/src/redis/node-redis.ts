/**
 * `fromNodeRedis`: node-redis (the `redis` package, v4 and v5) standalone and cluster clients
 * as an `EvalClient` for `RedisStore`. Imports nothing from node-redis (structural types
 * only), so it lives in core's Web-standard entry.
 */
import type { EvalClient } from '../types.js';

/** The options node-redis' `evalSha` and `eval` take. */
export interface NodeRedisEvalOptions {
  readonly keys: string[];
  readonly arguments: string[];
}

/**
 * The part of a node-redis client (`createClient()`) or cluster client (`createCluster()`)
 * the store uses. A cluster client routes each call by its first key; Sluice's keys of one
 * call share a hash tag, so one call always stays in one slot.
 */
export interface NodeRedisLike {
  evalSha(sha1: string, options: NodeRedisEvalOptions): Promise<unknown>;
  eval(script: string, options: NodeRedisEvalOptions): Promise<unknown>;
}

/** The `EvalClient` `fromNodeRedis` returns: it also says whether the client is a cluster. */
export interface NodeRedisEvalClient extends EvalClient {
  /** False for a standalone client: checks of different identities may share a script call. */
  readonly isCluster: boolean;
}

function split(numKeys: number, args: readonly (string | number)[]): NodeRedisEvalOptions {
  const all = args.map(String);
  return { keys: all.slice(0, numKeys), arguments: all.slice(numKeys) };
}

/**
 * Wraps a connected node-redis client for `RedisStore`:
 * `new RedisStore({ client: fromNodeRedis(await createClient({ url }).connect()) })`, or a
 * cluster client from `createCluster({ rootNodes })`. NOSCRIPT replies (a restarted Redis, a
 * SCRIPT FLUSH) surface as errors whose message holds `NOSCRIPT`, and the store resends the
 * script with EVAL. The client stays the app's: connect it before use, close it after.
 *
 * @param client a node-redis client or cluster client
 */
export function fromNodeRedis(client: NodeRedisLike): NodeRedisEvalClient {
  assertNodeRedisClient(client, 'fromNodeRedis');
  // A cluster client lists its primaries; a standalone client has no such member.
  const isCluster = 'masters' in client;
  return {
    isCluster,
    evalsha: (sha1, numKeys, ...args) => client.evalSha(sha1, split(numKeys, args)),
    eval: (script, numKeys, ...args) => client.eval(script, split(numKeys, args)),
  };
}

/** Throws a TypeError naming `caller` unless `client` offers node-redis's `evalSha()` and `eval()`. */
export function assertNodeRedisClient(client: unknown, caller: string): asserts client is NodeRedisLike {
  const c = client as Partial<NodeRedisLike> | null;
  if (
    typeof c !== 'object' ||
    c === null ||
    typeof c.evalSha !== 'function' ||
    typeof c.eval !== 'function'
  ) {
    throw new TypeError(
      `${caller}: "client" must be a node-redis client or cluster client (with evalSha() and eval())`,
    );
  }
}
