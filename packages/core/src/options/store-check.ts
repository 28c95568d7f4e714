/** Tells a `Store` from a Redis client passed where a store belongs. */

/**
 * Why `store` is not a Store, or `undefined` when it is one (an object with `decide()`).
 * A Redis client passed as it is gets told how to wrap it: ioredis (`evalsha`) in
 * `new RedisStore({ client })`, node-redis (`evalSha`) in
 * `new RedisStore({ client: fromNodeRedis(client) })`.
 */
export function storeProblem(store: unknown): string | undefined {
  if (typeof store !== 'object' || store === null) {
    return 'must be a Store (an object with decide() and reset())';
  }
  const s = store as Record<string, unknown>;
  if (typeof s.decide === 'function') return undefined;
  if (typeof s.check === 'function') {
    return 'must be a Store: its check() is now called decide(entries, mode, options?) (and checkSync() decideSync())';
  }
  if (typeof s.evalSha === 'function') {
    return 'must be a Store, not a node-redis client: wrap it in new RedisStore({ client: fromNodeRedis(client) })';
  }
  if (typeof s.evalsha === 'function') {
    return 'must be a Store, not a Redis client: wrap it in new RedisStore({ client })';
  }
  return 'must be a Store (an object with decide() and reset())';
}
