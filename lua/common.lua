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

-- Every algorithm registers itself here: ALGORITHMS[name] = function(key, nowMs,
-- limit, windowMs, intervalMs, cost) returning a result table (see decide.lua).
local ALGORITHMS = {}

-- A double as an exact decimal string ("-0" becomes "0").
local function fmt(x)
  if x == 0 then
    return '0'
  end
  return string.format('%.17g', x)
end

-- Whole units left, floor with EPS slack, clamped to [0, floor(limit)].
local function whole(x, limit)
  local r = math.floor(x + EPS)
  if r < 0 then
    return 0
  end
  local most = math.floor(limit)
  if r > most then
    return most
  end
  return r
end

-- GET that treats a value of another type (WRONGTYPE) as absent. redis.pcall returns
-- the error as a table instead of raising it, which is cheaper than pcall(redis.call).
local function get_string(key)
  local value = redis.pcall('GET', key)
  if type(value) ~= 'string' then
    return nil
  end
  return value
end

-- Splits "a|b|c" into numbers; nil when any part is not a number or the count differs.
local function parse_numbers(value, count)
  if value == nil then
    return nil
  end
  local out = {}
  local from = 1
  for i = 1, count - 1 do
    local bar = string.find(value, '|', from, true)
    if bar == nil then
      return nil
    end
    local n = tonumber(string.sub(value, from, bar - 1))
    if n == nil then
      return nil
    end
    out[i] = n
    from = bar + 1
  end
  local last = string.sub(value, from)
  if string.find(last, '|', 1, true) ~= nil then
    return nil
  end
  local n = tonumber(last)
  if n == nil then
    return nil
  end
  out[count] = n
  return out
end
