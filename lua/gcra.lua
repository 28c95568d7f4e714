-- GCRA (generic cell rate algorithm): exact rate with burst tolerance, one number of state.
--
-- State (one Redis string): "<tat>", the theoretical arrival time expressed in emission
--   intervals (TAT in ms divided by intervalMs). Counting in intervals instead of ms keeps
--   whole-unit costs exact: adding a cost of n adds exactly n, with no rounding drift.
-- Parameters: limit (burst capacity, units), intervalMs (emission interval: ms per unit;
--   the time from empty to full is limit * intervalMs; windowMs is not used),
--   cost (units, any positive number).
-- Clock: used = tat - nowMs / intervalMs, clamped to [0, limit]: idle time never refills
--   beyond the limit, and time going backwards only raises `used` (never creates capacity).
-- Returns (see decide.lua): allowed when used + cost <= limit (EPS slack);
--   remaining = floor(limit - used); resetMs = used * intervalMs (until tat is reached);
--   retryAfterMs = (used + cost - limit) * intervalMs (0 when allowed, -1 when
--   cost > limit: never). A charge writes tat = nowMs / intervalMs + used + cost with a TTL.

ALGORITHMS['gcra'] = function(key, now, limit, windowMs, intervalMs, cost)
  local nowU = now / intervalMs
  local used = 0
  local tat = tonumber(get_string(key) or '')
  if tat ~= nil then
    used = tat - nowU
    if used < 0 then
      used = 0
    elseif used > limit then
      used = limit
    end
  end

  local r = { allowed = used + cost <= limit + EPS }
  r.remaining = whole(limit - used, limit)
  r.resetMs = used * intervalMs
  if r.allowed then
    r.retryAfterMs = 0
  elseif cost > limit then
    r.retryAfterMs = -1
  else
    r.retryAfterMs = (used + cost - limit) * intervalMs
  end

  local used2 = used + cost
  r.chargedRemaining = whole(limit - used2, limit)
  r.chargedResetMs = used2 * intervalMs
  r.write = function(ttlMs)
    redis.call('SET', key, fmt(nowU + used2), 'PX', ttlMs)
  end
  return r
end
