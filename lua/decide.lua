-- Sluice decide script: every policy that applies to one request, decided in ONE call,
-- all or nothing. Built by packages/core/scripts/embed-lua.mjs as common.lua + the
-- algorithm files + this file (one chunk, embedded with its SHA1 for EVALSHA).
--
-- KEYS[i]  the state key of entry i (all keys share one hash tag: one Cluster slot).
--          Keys must be distinct. With a request record (ARGV[3]), its key comes last.
-- ARGV[1]  mode: 'consume' (charge when every entry allows) or 'peek' (never writes)
-- ARGV[2]  nowMs: '' = use Redis TIME (production; microsecond precision, fractional ms
--          kept); a number = explicit time in ms since the epoch (tests). With an explicit
--          time Redis still expires keys by its own clock, so written keys then get a TTL
--          of at least EXPLICIT_TTL_FLOOR_MS and a test's clock, not Redis's, decides.
-- ARGV[3]  requestTtlMs: '' = no request record. A positive number = the last KEY is the
--          record of an idempotent request (same hash tag as the entries): in mode
--          'consume', when the record exists its saved reply is returned and nothing is
--          decided or charged; otherwise the call decides as usual and saves its reply,
--          allowed or denied, under the record for requestTtlMs (PX, rounded up). A record
--          saved for a different number of entries is left alone and not replayed. The
--          record expires at nowMs + requestTtlMs by the script's clock too, so an explicit
--          nowMs sees the same lifetime as Redis TIME.
--          Mode 'peek' never reads nor writes the record.
-- ARGV[4 + 5 * (i - 1) ...], five per entry i = 1..number of entries:
--          algorithm  'token-bucket' | 'gcra' | 'sliding-window' | 'fixed-window' | 'sliding-log'
--          limit      units: quota per window, or bucket capacity (positive)
--          windowMs   window length in ms (window algorithms; positive)
--          intervalMs ms to earn back one unit (token bucket, GCRA; positive)
--          cost       units to charge (positive; a whole number for sliding-log)
--
-- Phase 1 evaluates every entry and writes nothing. Phase 2 (mode 'consume' and every
-- entry allows) charges every entry and sets a TTL on every written key of
-- ceil(ms until full) + 1, so idle keys vanish once they are equivalent to a fresh key.
-- A deny anywhere charges nothing anywhere.
--
-- Reply: a flat array, four items per entry, in KEYS order:
--   allowed       integer 1 or 0: this entry alone would admit the cost
--   remaining     string, whole units left after this call (0..limit); when nothing was
--                 charged (peek, or some entry denied) the units left now
--   resetMs       string, ms until this entry's quota is fully restored
--   retryAfterMs  string, ms until this entry could admit its cost; '0' when allowed,
--                 '-1' when never (cost > limit)
-- Bad arguments return an error reply and write nothing.

local EXPLICIT_TTL_FLOOR_MS = 600000
local MAX_TTL_MS = 1e15

local HEADER = 3

local function positive(value)
  local n = tonumber(value)
  if n == nil or n ~= n or n <= 0 or n == math.huge then
    return nil
  end
  return n
end

local mode = ARGV[1]
if mode ~= 'consume' and mode ~= 'peek' then
  return redis.error_reply('ERR sluice: mode must be consume or peek')
end
local count = #KEYS
local recordKey, recordTtl = nil, nil
if ARGV[3] ~= nil and ARGV[3] ~= '' then
  recordTtl = positive(ARGV[3])
  if recordTtl == nil or count < 1 then
    return redis.error_reply('ERR sluice: requestTtlMs must be a positive number with a record key')
  end
  count = count - 1
  recordKey = KEYS[#KEYS]
end
if #ARGV ~= HEADER + 5 * count then
  return redis.error_reply('ERR sluice: expected ' .. (HEADER + 5 * count) .. ' arguments, got ' .. #ARGV)
end
if mode ~= 'consume' then
  recordKey = nil
end

local now
local explicit = ARGV[2] ~= ''
if explicit then
  now = tonumber(ARGV[2])
  if now == nil or now ~= now or now == math.huge or now == -math.huge then
    return redis.error_reply('ERR sluice: nowMs must be a finite number')
  end
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
end

-- A request seen before: its saved reply, nothing decided or charged. The record is
-- "<expiresAtMs>|<reply items...>"; expiresAtMs (nowMs + requestTtlMs) decides with an
-- explicit time too, where Redis's own expiry (PX) follows its own clock.
if recordKey ~= nil then
  local saved = get_string(recordKey)
  if saved ~= nil then
    local items = {}
    for part in string.gmatch(saved, '[^|]+') do
      items[#items + 1] = part
    end
    local expiresAt = tonumber(items[1])
    if expiresAt ~= nil and now <= expiresAt then
      if #items == 1 + 4 * count then
        local reply = {}
        for k = 2, #items do
          reply[k - 1] = items[k]
        end
        for k = 1, #reply, 4 do
          reply[k] = tonumber(reply[k])
        end
        return reply
      end
      recordKey = nil
    end
  end
end

-- Phase 1: evaluate, no writes.
local results = {}
local all = true
for i = 1, count do
  local base = HEADER + 5 * (i - 1)
  local name = ARGV[base + 1]
  local algorithm = ALGORITHMS[name]
  if algorithm == nil then
    return redis.error_reply('ERR sluice: unknown algorithm in entry ' .. i)
  end
  local limit = positive(ARGV[base + 2])
  local windowMs = positive(ARGV[base + 3])
  local intervalMs = positive(ARGV[base + 4])
  local cost = positive(ARGV[base + 5])
  if limit == nil or windowMs == nil or intervalMs == nil or cost == nil then
    return redis.error_reply('ERR sluice: limit, windowMs, intervalMs and cost must be positive numbers (entry ' .. i .. ')')
  end
  if name == 'sliding-log' and cost ~= math.floor(cost) then
    return redis.error_reply('ERR sluice: sliding-log cost must be a whole number (entry ' .. i .. ')')
  end
  local r = algorithm(KEYS[i], now, limit, windowMs, intervalMs, cost)
  results[i] = r
  if not r.allowed then
    all = false
  end
end

-- Phase 2: charge all, only when all allow.
local charge = all and mode == 'consume'
local reply = {}
for i = 1, count do
  local r = results[i]
  local remaining, resetMs = r.remaining, r.resetMs
  if charge then
    local ttl = math.ceil(r.chargedResetMs) + 1
    if explicit and ttl < EXPLICIT_TTL_FLOOR_MS then
      ttl = EXPLICIT_TTL_FLOOR_MS
    end
    if ttl > MAX_TTL_MS then
      ttl = MAX_TTL_MS
    end
    r.write(fmt(ttl))
    remaining, resetMs = r.chargedRemaining, r.chargedResetMs
  end
  local k = 4 * (i - 1)
  reply[k + 1] = r.allowed and 1 or 0
  reply[k + 2] = fmt(remaining)
  reply[k + 3] = fmt(resetMs)
  reply[k + 4] = fmt(r.retryAfterMs)
end
if recordKey ~= nil then
  local saved = fmt(now + recordTtl) .. '|' .. table.concat(reply, '|')
  redis.call('SET', recordKey, saved, 'PX', fmt(math.ceil(recordTtl)))
end
return reply
