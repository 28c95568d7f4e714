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

-- A wait is replied in whole ms, rounded up; a fraction of at most WAIT_NOISE_MS (1 ns) is
-- floating-point noise of the arithmetic (497.00000000000006 is 497), not time, so a told wait
-- never counts down faster than the clock.
local WAIT_NOISE_MS = 1e-6

-- The library functions called per key, as locals: a global lookup costs a table access
-- in Redis's Lua on every call.
local tonumber, type = tonumber, type
local floor, ceil = math.floor, math.ceil
local find, sub, format, byte = string.find, string.sub, string.format, string.byte
local rcall, rpcall = redis.call, redis.pcall

-- A written key's TTL with an explicit time (tests) is at least this, so the test's clock, not
-- Redis's, decides; no TTL is longer than MAX_TTL_MS.
local EXPLICIT_TTL_FLOOR_MS = 600000
local MAX_TTL_MS = 1e15

-- The script's now in ms, from ARGV[1]: '' = Redis TIME (microsecond precision, fractional ms
-- kept: production); a number = an explicit time, 0 <= nowMs < 1e13 (tests). Returns now and
-- whether it was explicit; nil for a bad argument (the script replies BAD_NOW).
local BAD_NOW = 'ERR sluice: nowMs must be a number from 0 to 1e13 (ms since the epoch)'
local function script_now(arg)
  if arg ~= '' then
    local now = tonumber(arg)
    if now == nil or not (now >= 0 and now < 1e13) then
      return nil, true
    end
    return now, true
  end
  local t = rcall('TIME')
  -- TIME's two numeric strings, converted by the arithmetic (one strtod each; tonumber makes two).
  return t[1] * 1000 + t[2] / 1000, false
end
local unpack = unpack

-- Every algorithm registers itself here: ALGORITHMS[name] = function(r, key, saved, nowMs,
-- limit, windowMs, intervalMs, cost, slot) filling the result table r (see decide.lua, which
-- reuses one table per entry position, so nothing is allocated per decision). `saved` is the
-- key's value as read by decide.lua (one GET, or one MGET for every entry of a decision): a
-- string, or nil when the key is absent or holds another type; `slot` is a concurrency entry's
-- slot id in mode 'consume' (nil otherwise: the other algorithms ignore it). An
-- algorithm sets every field it reads back, and the common ones: allowed, remaining,
-- resetMs, retryAfterMs, chargedRemaining, chargedResetMs, key, write (r.write(r, ttlMs, turn)
-- charges; `turn`, the entry's policy table when the charge reserves a future turn, else false:
-- see WAITS and decide.lua). Its name, its file and the other fields it sets are declared by its module in
-- packages/core/src/algorithms/ (lua.resultFields), which the registry lists.
local ALGORITHMS = {}

-- A double as an exact decimal string ("-0" becomes "0"). A whole number below 2^53 is written
-- with '%d': the digits '%.17g' writes, at under half its cost.
local function fmt(x)
  if x == 0 then
    return '0'
  end
  if x == floor(x) and x < 9007199254740992 and x > -9007199254740992 then
    return format('%d', x)
  end
  return format('%.17g', x)
end

-- fmt of a time a state stores (tsMs, a window's start): the writes of one call mostly store the
-- same one (the call's clock, the current window), so the last one written is kept and reused.
local fmt_time_at, fmt_time_text = nil, nil
local function fmt_time(x)
  if x ~= fmt_time_at then
    fmt_time_at, fmt_time_text = x, fmt(x)
  end
  return fmt_time_text
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

-- Every state names the algorithm that wrote it, so no algorithm reads another's state
-- (a policy name re-used with another algorithm starts fresh): token bucket "<n>|<n>"
-- (digits first), GCRA 'g', sliding window 'w', fixed window 'f' (tag bytes below), a
-- sliding log a space (its header). A reader takes only its own shape.
local TAG_GCRA, TAG_SLIDING_WINDOW, TAG_FIXED_WINDOW = 103, 119, 102

-- Splits "a|b" (from byte `from`: 1, or 2 after a tag byte) into its two numbers; nil
-- when the value has another number of parts or a part is not a number. Multiple
-- results, no table: this runs once per key.
local function parse2(value, from)
  local bar = find(value, '|', from, true)
  if bar == nil then
    return nil
  end
  local rest = sub(value, bar + 1)
  if find(rest, '|', 1, true) ~= nil then
    return nil
  end
  local a, b = tonumber(sub(value, from, bar - 1)), tonumber(rest)
  if a == nil or b == nil then
    return nil
  end
  return a, b
end

-- The numbers of a state tagged `tag` with two parts; nil for anything else (absent,
-- another algorithm's state, another shape).
local function tagged2(value, tag)
  if value == nil or byte(value, 1) ~= tag then
    return nil
  end
  return parse2(value, 2)
end

-- The numbers of a state tagged `tag` with three parts "<tag>a|b|c"; nil as tagged2.
local function tagged3(value, tag)
  if value == nil or byte(value, 1) ~= tag then
    return nil
  end
  local bar = find(value, '|', 2, true)
  if bar == nil then
    return nil
  end
  local b, c = parse2(value, bar + 1)
  local a = tonumber(sub(value, 2, bar - 1))
  if b == nil or a == nil then
    return nil
  end
  return a, b, c
end

-- True when `ms` is a start of the windows of length windowMs (ms = k * windowMs for a
-- whole k, computed as the writer computed it): a window state written under another
-- window length is not read as one of these windows.
local function is_window_start(ms, windowMs)
  return floor(ms / windowMs + 0.5) * windowMs == ms
end

-- ==== settle: the settle script only (embed-lua.mjs leaves it out of decide) ====

-- Every algorithm's settle of a reservation (lua/settle.lua): SETTLES[name] = function(value,
-- nowMs, limit, windowMs, intervalMs, deltaUnits, reservedAtMs, reservedUnits, reservedByMs) for
-- the stored string `value` of an existing key, returning the new state string and the ms it must
-- be kept (before the TTL's +1), or nil when there is nothing to settle (another algorithm's
-- state, the reservation's window over, nothing of it left to refund). deltaUnits > 0 charges (up
-- to a debt of one limit), < 0 refunds (never above the capacity). The reservation was charged
-- between reservedAtMs and reservedByMs. The TypeScript twins are the modules' `settle`.
local SETTLES = {}

-- A bucket's (token bucket, GCRA) delta to settle: a charge as it is; a refund cut to at most
-- the reservation less what the policy earned back from reservedAt (plus the reserved turn's
-- wait: until its turn a reservation holds the bucket in debt) to `latest` (the latest time
-- the state saw: time gone backwards earns nothing back; a debt's end, the last turn reserved,
-- so a cancelled turn gives back only what no later turn stands on). Had the reservation never been made,
-- the bucket would hold no more than that much more now: the refill since may have filled it
-- (its key expired and came back fresh). A reserved turn (wait > 0) lies between reservedAt +
-- wait and reservedBy + wait (the caller's clock is not the script's: a round trip and whole ms
-- apart): a debt's end within that is the turn itself, the last one reserved, and it gives all
-- back (counted from reservedAt instead, each cancel of a queue, the last turn first, would
-- leave its shortfall to the next, doubling it). 0: nothing left to refund. Twin: `bucketDelta`.
local function bucket_delta(delta, latest, intervalMs, reservedAt, reserved, reservedBy, wait)
  if delta >= 0 then
    return delta
  end
  local most = reserved
  local turn = reservedAt + wait
  if wait > 0 and latest <= reservedBy + wait then
    most = reserved
  elseif latest > turn then
    most = reserved - (latest - turn) / intervalMs
  end
  if most <= 0 then
    return 0
  end
  if delta > -most then
    return delta
  end
  return -most
end

-- The most units a settle's charge leaves held: a debt of one limit, or what was held already.
local function settle_ceiling(held, limit)
  if held > 2 * limit then
    return held
  end
  return 2 * limit
end
