/**
 * A Redis storage for @nestjs/throttler, as a typical application writes one (the community
 * package for it does not declare support for Nest 12 yet): one Lua call per request that
 * counts hits in a fixed window and sets a block key once the limit is passed.
 * Implements ThrottlerStorage.increment(key, ttlMs, limit, blockDurationMs, throttlerName).
 */
const SCRIPT = `
local hits = redis.call('INCR', KEYS[1])
if hits == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
local blockTtl = redis.call('PTTL', KEYS[2])
if blockTtl <= 0 and hits > tonumber(ARGV[2]) then
  redis.call('SET', KEYS[2], '1', 'PX', ARGV[3])
  blockTtl = tonumber(ARGV[3])
end
return { hits, ttl, blockTtl }
`;

/** ThrottlerStorage on an ioredis client. */
export class RedisThrottlerStorage {
  /** @param {import('ioredis').Redis} client */
  constructor(client, prefix = 'throttler') {
    this.client = client;
    this.prefix = prefix;
    client.defineCommand('throttlerIncrement', { numberOfKeys: 2, lua: SCRIPT });
  }

  async increment(key, ttl, limit, blockDuration, throttlerName) {
    const base = `${this.prefix}:{${key}:${throttlerName}}`;
    const [totalHits, ttlMs, blockTtlMs] = await this.client.throttlerIncrement(
      `${base}:hits`,
      `${base}:blocked`,
      ttl,
      limit,
      blockDuration > 0 ? blockDuration : ttl,
    );
    const isBlocked = blockTtlMs > 0;
    return {
      totalHits,
      timeToExpire: Math.ceil(ttlMs / 1000),
      isBlocked,
      timeToBlockExpire: isBlocked ? Math.ceil(blockTtlMs / 1000) : 0,
    };
  }
}
