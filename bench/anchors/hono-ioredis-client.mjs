/** The client interface hono-rate-limiter's RedisStore expects, on an ioredis client. */
export function honoRedisClient(client) {
  return {
    scriptLoad: (script) => client.script('LOAD', script),
    evalsha: (sha1, keys, args) => client.evalsha(sha1, keys.length, ...keys, ...args),
    decr: (key) => client.decr(key),
    del: (key) => client.del(key),
  };
}
