/**
 * The floor of a token-bucket decision in Redis: the least a script can do and still be a token
 * bucket. One HMGET, the refill and charge arithmetic, one HSET and one PEXPIRE (plus the TIME
 * every script of a distributed limiter reads). No validation, no batching, no tags: what one
 * unbatched Sluice call of a plain token bucket is compared with (issue target: within 2x).
 *
 * KEYS[1] the bucket (a hash: t = tokens, s = the time they were counted, ms)
 * ARGV[1] limit (capacity), ARGV[2] intervalMs (ms per unit earned back)
 * Reply: { allowed (1/0), whole tokens left }
 */
export const MINIMAL_TOKEN_BUCKET_SCRIPT = `local limit, intervalMs = tonumber(ARGV[1]), tonumber(ARGV[2])
local t = redis.call('TIME')
local now = t[1] * 1000 + t[2] / 1000
local v = redis.call('HMGET', KEYS[1], 't', 's')
local tokens, ts = tonumber(v[1]), tonumber(v[2])
if tokens == nil or ts == nil then
  tokens, ts = limit, now
end
if now > ts then
  tokens = math.min(limit, tokens + (now - ts) / intervalMs)
end
local allowed = 0
if tokens >= 1 then
  tokens = tokens - 1
  allowed = 1
end
redis.call('HSET', KEYS[1], 't', tokens, 's', now)
redis.call('PEXPIRE', KEYS[1], math.ceil((limit - tokens) * intervalMs) + 1)
return { allowed, math.floor(tokens) }
`;
