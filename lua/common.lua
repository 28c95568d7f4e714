-- Shared helpers of the Sluice decide script (concatenated first; see decide.lua).
--
-- Numbers: every time is in milliseconds as a Lua number (a double) and may carry a
-- fraction. Numbers are stored and returned with fmt(), "%.17g", which round-trips a
-- double exactly, so the TypeScript twin in packages/core/src/algorithms/ computes
-- bit-identical results from identical inputs.
--
-- EPS: comparisons against a quota allow 1e-9 units of slack so that floating-point
-- noise (1 - 0.1 * 10 is not exactly 0) never denies a request that fits or hides a
-- unit from `remaining`. It is far below any cost a caller can mean.

local EPS = 1e-9

-- The library functions called per key, as locals: a global lookup costs a table access
-- in Redis's Lua on every call.
local tonumber, type = tonumber, type
local floor, ceil = math.floor, math.ceil
local find, sub, format = string.find, string.sub, string.format
local rcall, rpcall = redis.call, redis.pcall

-- Every algorithm registers itself here: ALGORITHMS[name] = function(r, key, nowMs,
-- limit, windowMs, intervalMs, cost) filling the result table r (see decide.lua, which
-- reuses one table per entry position, so nothing is allocated per decision). An
-- algorithm sets every field it reads back, and the common ones: allowed, remaining,
-- resetMs, retryAfterMs, chargedRemaining, chargedResetMs, write (r.write(r, ttlMs)
-- charges).
local ALGORITHMS = {}

-- A double as an exact decimal string ("-0" becomes "0").
local function fmt(x)
  if x == 0 then
    return '0'
  end
  return format('%.17g', x)
end

-- Whole units left, floor with EPS slack, clamped to [0, floor(limit)].
local function whole(x, limit)
  local r = floor(x + EPS)
  if r < 0 then
    return 0
  end
  local most = floor(limit)
  if r > most then
    return most
  end
  return r
end

-- GET that treats a value of another type (WRONGTYPE) as absent. redis.pcall returns
-- the error as a table instead of raising it, which is cheaper than pcall(redis.call).
local function get_string(key)
  local value = rpcall('GET', key)
  if type(value) ~= 'string' then
    return nil
  end
  return value
end

-- Splits "a|b" into its two numbers; nil when the value is nil, has another number of
-- parts, or a part is not a number. Multiple results, no table: this runs once per key.
local function parse2(value)
  if value == nil then
    return nil
  end
  local bar = find(value, '|', 1, true)
  if bar == nil then
    return nil
  end
  local rest = sub(value, bar + 1)
  if find(rest, '|', 1, true) ~= nil then
    return nil
  end
  local a, b = tonumber(sub(value, 1, bar - 1)), tonumber(rest)
  if a == nil or b == nil then
    return nil
  end
  return a, b
end

-- Splits "a|b|c" into its three numbers; nil as parse2.
local function parse3(value)
  if value == nil then
    return nil
  end
  local bar = find(value, '|', 1, true)
  if bar == nil then
    return nil
  end
  local a, c = parse2(sub(value, bar + 1))
  local first = tonumber(sub(value, 1, bar - 1))
  if a == nil or first == nil then
    return nil
  end
  return first, a, c
end
