-- Sluice settle script: the actual cost of a reserved request, for every entry of its decision
-- in ONE call (atomic). Built by packages/core/scripts/embed-lua.mjs as common.lua + the
-- algorithm files + the generated registry part + this file (one chunk, embedded with its SHA1
-- for EVALSHA); each algorithm's SETTLES[name] does its arithmetic (see common.lua).
--
-- KEYS     the state key of each entry (distinct; on Redis Cluster all in one hash slot)
-- ARGV[1]  nowMs: '' = use Redis TIME (production); a number = explicit time in ms since the
--          epoch, 0 <= nowMs < 1e13 (tests), as in decide.lua (charged keys then get a TTL of
--          at least EXPLICIT_TTL_FLOOR_MS)
-- Then eight per entry, in KEYS order (nine when the call settles a reserved turn: waitMs):
--   algorithm      an algorithm's name (packages/core/src/algorithms/registry.ts)
--   limit          units (positive), windowMs (positive), intervalMs (positive): the policy's
--   windowMs       numbers, as decide.lua takes them
--   intervalMs
--   deltaUnits     actual minus reserved units: > 0 charges, < 0 refunds, 0 does nothing
--                  (a whole number where WHOLE_COSTS[algorithm]: sliding-log)
--   reservedUnits  the units the check charged (positive, at least -deltaUnits)
--   reservedAgoMs  ms since the check was asked (>= 0): the reservation was charged at
--                  nowMs - reservedAgoMs at the earliest (window algorithms find its window by
--                  it, buckets count the refill since it)
--   answeredAgoMs  ms since the check's answer came back (0 to reservedAgoMs): the reservation
--                  was charged at nowMs - answeredAgoMs at the latest (a sliding log refunds only
--                  its records up to then)
--   waitMs         only in a call of nine per entry: the wait of the turn the check reserved
--                  (>= 0; 0: none; see decide.lua): a bucket counts no refill before
--                  nowMs - reservedAgoMs + waitMs (until its turn a reservation is a debt),
--                  and a debt that ends by nowMs - answeredAgoMs + waitMs ends at this turn
--                  (the last reserved): a cancel then gives every unit back
--
-- Per entry: a key that does not exist (expired, reset) is left alone, never recreated; so is
-- a state another algorithm wrote, and a reservation whose window is over. A refund is capped
-- at what was reserved and never lifts the state above its capacity: a bucket (token bucket,
-- GCRA) refunds at most the reservation less what it earned back since (bucket_delta), a
-- sliding log only from records up to the reservation, so a refund after the key refilled,
-- expired or was drained anew is dropped. It keeps the key's TTL (SET KEEPTTL). A charge is applied in full up to
-- a debt of one limit beyond the quota (later checks wait until it is repaid), with a TTL of
-- ceil(ms until the state is as good as a fresh key) + 1, as decide.lua sets it.
--
-- Reply: one integer per entry, in KEYS order: 1 = settled, 0 = nothing to settle.
-- Bad arguments return an error reply before anything is read or written.


local function positive(value)
  local n = tonumber(value)
  if n == nil or n ~= n or n <= 0 or n == math.huge then
    return nil
  end
  return n
end

local count = #KEYS
-- Items per entry: 8, or 9 with waitMs (a count of KEYS tells them apart).
local per = 8
if #ARGV == 1 + 9 * count and count > 0 then
  per = 9
elseif #ARGV ~= 1 + 8 * count then
  return redis.error_reply('ERR sluice: expected ' .. (1 + 8 * count) .. ' arguments, got ' .. #ARGV)
end
local entries = {}
for i = 1, count do
  local base = 1 + per * (i - 1)
  local name = ARGV[base + 1]
  local settle = SETTLES[name]
  if settle == nil then
    return redis.error_reply('ERR sluice: unknown algorithm in entry ' .. i)
  end
  local limit, windowMs, intervalMs = positive(ARGV[base + 2]), positive(ARGV[base + 3]), positive(ARGV[base + 4])
  if limit == nil or windowMs == nil or intervalMs == nil then
    return redis.error_reply('ERR sluice: limit, windowMs and intervalMs must be positive numbers (entry ' .. i .. ')')
  end
  local delta, reserved = tonumber(ARGV[base + 5]), positive(ARGV[base + 6])
  local ago, answered, wait = tonumber(ARGV[base + 7]), tonumber(ARGV[base + 8]), 0
  if per == 9 then
    wait = tonumber(ARGV[base + 9])
  end
  if delta == nil or delta ~= delta or delta == math.huge or delta == -math.huge then
    return redis.error_reply('ERR sluice: deltaUnits must be a finite number (entry ' .. i .. ')')
  end
  if WHOLE_COSTS[name] and delta ~= floor(delta) then
    return redis.error_reply('ERR sluice: ' .. name .. ' deltaUnits must be a whole number (entry ' .. i .. ')')
  end
  if reserved == nil or delta < -reserved then
    return redis.error_reply('ERR sluice: reservedUnits must be a positive number, at least -deltaUnits (entry ' .. i .. ')')
  end
  if ago == nil or not (ago >= 0 and ago < 1e13) then
    return redis.error_reply('ERR sluice: reservedAgoMs must be a number from 0 to 1e13 (entry ' .. i .. ')')
  end
  if answered == nil or not (answered >= 0 and answered <= ago) then
    return redis.error_reply('ERR sluice: answeredAgoMs must be a number from 0 to reservedAgoMs (entry ' .. i .. ')')
  end
  if wait == nil or not (wait >= 0 and wait < 1e13) then
    return redis.error_reply('ERR sluice: waitMs must be a number from 0 to 1e13 (entry ' .. i .. ')')
  end
  entries[i] = { settle = settle, limit = limit, windowMs = windowMs, intervalMs = intervalMs, delta = delta,
    reserved = reserved, ago = ago, answered = answered, wait = wait }
end

local now, explicit = script_now(ARGV[1])
if now == nil then
  return redis.error_reply(BAD_NOW)
end

local reply = {}
for i = 1, count do
  local e, key = entries[i], KEYS[i]
  reply[i] = 0
  local value = nil
  if e.delta ~= 0 then
    value = get_string(key)
  end
  if value ~= nil then
    local text, keepMs = e.settle(value, now, e.limit, e.windowMs, e.intervalMs, e.delta, now - e.ago,
      e.reserved, now - e.answered, e.wait)
    if text ~= nil then
      if e.delta < 0 then
        rcall('SET', key, text, 'KEEPTTL')
      else
        local ttl = ceil(keepMs) + 1
        if explicit and ttl < EXPLICIT_TTL_FLOOR_MS then
          ttl = EXPLICIT_TTL_FLOOR_MS
        end
        if ttl > MAX_TTL_MS then
          ttl = MAX_TTL_MS
        end
        rcall('SET', key, text, 'PX', ttl)
      end
      reply[i] = 1
    end
  end
end
return reply
