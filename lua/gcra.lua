-- GCRA (generic cell rate algorithm): exact rate with burst tolerance, one number of state.
--
-- State (one Redis string holding an integer, so Redis stores it int-encoded, no
--   allocation besides the key): the theoretical arrival time (TAT) counted in
--   1/scale-ths of an emission interval: tat = TAT_ms / intervalMs * scale.
--   scale = 2^s with s = 11 + floor(log2(intervalMs)) (clamped to 10..40), which keeps
--   tat below 2^53 (exact in a double) until the year 2109 at a resolution of 0.5-1 us.
--   Whole-unit costs add exactly `cost * scale`: no rounding drift, however many
--   requests arrive at the same instant.
-- Parameters: limit (burst capacity, units), intervalMs (emission interval: ms per unit;
--   the time from empty to full is limit * intervalMs; windowMs is not used),
--   cost (units, any positive number; a fraction is rounded up to 1/scale of a unit).
-- Clock: used = (tat - now_scaled) / scale, clamped to [0, limit + slack]: idle time
--   never refills beyond the limit, and time going backwards only raises `used`.
-- Slack: comparisons allow the larger of 4 / scale units and one microsecond of refill
--   (0.001 / intervalMs, at most 0.5), above the rounding noise of now_scaled, so a unit
--   that is due is never hidden.
-- Returns (see decide.lua): allowed when used + cost <= limit + slack;
--   remaining = floor(limit - used + slack); resetMs = TAT in ms since the epoch - now
--   (see gcra_ms_until; used * intervalMs when used is clamped at limit + slack);
--   retryAfterMs = (used + cost - limit) * intervalMs (0 when allowed, -1 when
--   cost > limit: never). A charge writes tat = max(tat, floor(now_scaled)) + ceil(cost * scale).

-- 2^s for an emission interval (see above); multiplication only, so Lua and
-- TypeScript get the same power of two.
local function gcra_scale(intervalMs)
  local scale, t, s = 2048, intervalMs, 11
  while t >= 2 and s < 40 do
    t = t / 2
    scale = scale * 2
    s = s + 1
  end
  while t < 1 and s > 10 do
    t = t * 2
    scale = scale / 2
    s = s - 1
  end
  return scale
end

-- Ms from now until the arrival time tat (scaled units), at least 0. The arrival time is
-- turned into ms since the epoch first, a value of the state alone, and the difference of
-- two nearby doubles is exact: every call on the same state names the same instant, a
-- later call reports exactly the time elapsed less, and the key's TTL (set from the
-- charge's value) never outlives a later report by more than its one ms of margin.
-- (Measured from the scaled clock, the two calls rounded apart.)
local function gcra_ms_until(tat, scale, intervalMs, now)
  local ms = tat / scale * intervalMs - now
  if ms > 0 then
    return ms
  end
  return 0
end

local function gcra_write(r, ttlMs)
  rcall('SET', r.key, format('%.0f', r.tat2), 'PX', ttlMs)
end

ALGORITHMS['gcra'] = function(r, key, now, limit, windowMs, intervalMs, cost)
  local scale = gcra_scale(intervalMs)
  local nowF = now / intervalMs * scale
  local slack = 0.001 / intervalMs
  if slack > 0.5 then
    slack = 0.5
  end
  if slack < 4 / scale then
    slack = 4 / scale
  end
  local tat = tonumber(get_string(key) or '')
  local used = 0
  local resetMs = 0
  if tat ~= nil then
    used = (tat - nowF) / scale
    if used < 0 then
      used = 0
    elseif used > limit + slack then
      used = limit + slack
    end
    if used >= limit + slack then
      resetMs = used * intervalMs
    else
      resetMs = gcra_ms_until(tat, scale, intervalMs, now)
    end
  end

  r.allowed = used + cost <= limit + slack
  r.remaining = whole(limit - used + slack, limit)
  r.resetMs = resetMs
  if r.allowed then
    r.retryAfterMs = 0
  elseif cost > limit then
    r.retryAfterMs = -1
  else
    r.retryAfterMs = (used + cost - limit) * intervalMs
  end

  local base = floor(nowF)
  if tat ~= nil and tat > nowF then
    base = tat
  end
  local tat2 = base + ceil(cost * scale)
  local used2 = (tat2 - nowF) / scale
  r.chargedRemaining = whole(limit - used2 + slack, limit)
  r.chargedResetMs = gcra_ms_until(tat2, scale, intervalMs, now)
  r.key, r.tat2, r.write = key, tat2, gcra_write
end
