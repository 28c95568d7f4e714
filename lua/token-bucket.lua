-- Token bucket: capacity `limit` tokens, one token earned back every `intervalMs`,
-- lazy refill, fractional tokens.
--
-- State (one Redis string): "<tokens>|<tsMs>" (untagged: it starts with a digit or '-',
--   which no other algorithm's state does; see common.lua)
--   tokens  tokens in the bucket at tsMs (a double, may carry a fraction)
--   tsMs    the time the tokens were counted, in ms (the latest time seen; never moves back)
-- Parameters: limit (capacity, units), intervalMs (ms per unit earned back; the time
--   from empty to full is limit * intervalMs; windowMs is not used), cost (units,
--   any positive number).
-- Other limits: the tokens read under any limit or interval, capped at the limit and at
--   a debt of this policy's slack, so a changed policy never waits longer than its own
--   (limit + slack) * intervalMs beyond a debt kept as time (a settle's, a reserved turn's).
-- Waiting (the write's `turn`, decide.lua): a turn reserved when the bucket holds too few tokens
--   is charged now, its debt kept as time: "0|<turnMs>", empty until the turn, so later
--   checks queue behind it.
-- Clock: elapsed = nowMs - tsMs, clamped at 0: when time goes backwards the bucket is
--   frozen at the later time, so it never gains tokens.
-- Slack: comparisons allow 0.001 / intervalMs tokens (at most 0.5), the refill of one
--   microsecond (the clock's resolution), so rounding of ms timestamps never hides a token
--   that is due. A charge may leave up to that much below 0 (kept, never forgiven).
-- Returns (see decide.lua): allowed when tokens + slack >= cost;
--   remaining = floor(tokens + slack); resetMs = ms until the bucket is full;
--   retryAfterMs = ms until `cost` tokens are there (0 when allowed, -1 when
--   cost > limit: never). A charge subtracts cost and writes "<tokens>|<tsMs>" with a TTL.

-- `turn` (the policy table, decide.lua): a reserved turn left the bucket below empty; the debt is
-- kept as time, an empty bucket until the turn (it earns nothing until then), which no read
-- forgives. Twin: the module's `reserve`.
local function token_bucket_write(r, ttlMs, turn)
  if turn and r.left < 0 then
    rcall('SET', r.key, '0|' .. fmt(r.ts - r.left * turn.intervalMs), 'PX', ttlMs)
    return
  end
  rcall('SET', r.key, fmt(r.left) .. '|' .. fmt_time(r.ts), 'PX', ttlMs)
end

ALGORITHMS['token-bucket'] = function(r, key, saved, now, limit, windowMs, intervalMs, cost)
  local tokens, ts = limit, now
  local savedTokens, savedTs
  if saved ~= nil then
    savedTokens, savedTs = parse2(saved, 1)
  end
  if savedTokens ~= nil then
    tokens, ts = savedTokens, savedTs
    local elapsed = now - ts
    if elapsed > 0 then
      if elapsed >= (limit - tokens) * intervalMs then
        tokens = limit
      else
        tokens = tokens + elapsed / intervalMs
      end
      ts = now
    end
  end
  if tokens > limit then
    tokens = limit
  end
  local slack = 0.001 / intervalMs
  if slack > 0.5 then
    slack = 0.5
  end
  -- A debt beyond this policy's slack was left under other limits: forgiven.
  if tokens < -slack then
    tokens = -slack
  end

  r.allowed = tokens + slack >= cost
  r.remaining = whole(tokens + slack, limit)
  if tokens >= limit then
    r.resetMs = 0
  else
    r.resetMs = (ts - now) + (limit - tokens) * intervalMs
  end
  if r.allowed then
    r.retryAfterMs = 0
  elseif cost > limit then
    r.retryAfterMs = -1
  else
    r.retryAfterMs = (ts - now) + (cost - tokens) * intervalMs
  end

  local left = tokens - cost
  r.chargedRemaining = whole(left + slack, limit)
  r.chargedResetMs = (ts - now) + (limit - left) * intervalMs
  r.key, r.left, r.ts, r.write = key, left, ts, token_bucket_write
end

-- ==== settle: the settle script only (embed-lua.mjs leaves it out of decide) ====

-- Settle (lua/settle.lua): the bucket refilled to now, then deltaUnits taken (a charge) or
-- given back (a refund, never above the capacity, nor above the reservation less the refill
-- since it: bucket_delta). A charge below 0 is a debt, kept as time: an
-- empty bucket counted from tsMs in the future (it earns nothing until then, as after time went
-- backwards), so checks wait until it is repaid and no read clamps it; at most one limit of it.
-- Full (as good as expired): nothing.
SETTLES['token-bucket'] = function(value, now, limit, windowMs, intervalMs, delta, reservedAt, reserved, reservedBy,
    wait)
  local tokens, ts = parse2(value, 1)
  if tokens == nil then
    return nil
  end
  local elapsed = now - ts
  if elapsed > 0 then
    if elapsed >= (limit - tokens) * intervalMs then
      tokens = limit
    else
      tokens = tokens + elapsed / intervalMs
    end
    ts = now
  end
  if tokens > limit then
    tokens = limit
  end
  if ts <= now and tokens >= limit then
    return nil
  end
  delta = bucket_delta(delta, ts, intervalMs, reservedAt, reserved, reservedBy, wait)
  if delta == 0 then
    return nil
  end
  -- Tokens at now, a debt counted in: what an empty bucket earns back until tsMs is owed.
  local level = tokens - (ts - now) / intervalMs
  local next = level - delta
  if delta < 0 then
    if next > limit then
      next = limit
    end
  else
    local least = -limit
    if level < -limit then
      least = level
    end
    if next < least then
      next = least
    end
  end
  local tokens2, ts2 = next, now
  if next < 0 then
    tokens2, ts2 = 0, now - next * intervalMs
  end
  return fmt(tokens2) .. '|' .. fmt(ts2), ts2 - now + (limit - tokens2) * intervalMs
end
