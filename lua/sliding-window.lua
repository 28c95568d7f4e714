-- Sliding window counter: the current window's count plus the previous window's count
-- weighted by how much of the previous window still overlaps the rolling window.
-- No boundary double burst; an estimate, not an exact log.
--
-- State (one Redis string): "w<startMs>|<current>|<previous>"
--   startMs   the window's start, floor(nowMs / windowMs) * windowMs (epoch-aligned
--             windows, ms since the epoch). Read only when it is a start of this policy's
--             windows (see fixed-window.lua), so a state written under another windowMs
--             is not misread; a value without the 'w' tag starts fresh.
--   current   units admitted in that window; previous: units admitted in the window before
--   The window number lives in the value, not in the key: the caller builds keys before
--   the script reads Redis TIME, so only the script knows which window is current.
-- Parameters: limit (units per rolling window), windowMs (window length, ms),
--   cost (units, any positive number; fractions are summed like whole units).
-- Clock: the window never moves back (a stored later window is kept)
--   and the elapsed part of the window is clamped to [0, 1], so time going backwards
--   only raises the estimate.
-- Estimate: previous * (1 - elapsed fraction) + current.
-- Returns (see decide.lua): allowed when estimate + cost <= limit (EPS slack);
--   remaining = floor(limit - estimate); resetMs = ms until the estimate is 0 (end of
--   the next window when current > 0, end of this window when only previous > 0);
--   retryAfterMs = ms until the estimate has room for cost (0 when allowed, -1 when
--   cost > limit: never; 2^-10 ms later where the instant rounded to a double would not
--   yet have the room, so that a client that waits it finds the room). A charge adds cost to current and writes the state with a TTL.

-- Rounding of times to come: the instant at which the estimate has room, rounded to a
-- double, may fall a hair before it has; then it is reported 2^-10 ms later.
local SLIDING_WINDOW_MARGIN_MS = 0.0009765625

-- The instant `start` + windowMs * (1 - room / units) at which `units` weighted by the
-- rest of the window starting at `start` (plus `plus` unweighted) leave room for cost,
-- checked as a read at that instant computes it.
local function sliding_window_at(start, windowMs, room, units, plus, cost, limit)
  local at = start + windowMs * (1 - room / units)
  local f = (at - start) / windowMs
  if f > 1 then
    f = 1
  end
  if units * (1 - f) + plus + cost > limit + EPS then
    at = at + SLIDING_WINDOW_MARGIN_MS
  end
  return at
end

local function sliding_window_write(r, ttlMs)
  rcall('SET', r.key, 'w' .. fmt_time(r.win) .. '|' .. fmt(r.cur2) .. '|' .. fmt(r.prev), 'PX', ttlMs)
end

ALGORITHMS['sliding-window'] = function(r, key, saved, now, limit, windowMs, intervalMs, cost)
  local n = floor(now / windowMs)
  local win, cur, prev = n * windowMs, 0, 0
  local savedStart, savedCur, savedPrev = tagged3(saved, TAG_SLIDING_WINDOW)
  if savedStart ~= nil then
    if savedStart == win or (savedStart > win and is_window_start(savedStart, windowMs)) then
      win, cur, prev = savedStart, savedCur, savedPrev
    elseif savedStart == (n - 1) * windowMs then
      prev = savedCur
    end
  end
  local f = (now - win) / windowMs
  if f < 0 then
    f = 0
  elseif f > 1 then
    f = 1
  end
  local est = prev * (1 - f) + cur

  r.allowed = est + cost <= limit + EPS
  r.remaining = whole(limit - est, limit)
  if cur > 0 then
    r.resetMs = win + 2 * windowMs - now
  elseif prev > 0 then
    r.resetMs = win + windowMs - now
  else
    r.resetMs = 0
  end
  if r.allowed then
    r.retryAfterMs = 0
  elseif cost > limit then
    r.retryAfterMs = -1
  else
    local room = limit - cur - cost
    local at
    if room >= 0 then
      at = sliding_window_at(win, windowMs, room, prev, cur, cost, limit)
    else
      local room2 = limit - cost
      -- cur == room2: the window end, where cur + cost may still round above the limit;
      -- sliding_window_at returns it, with the margin when it does.
      if cur < room2 then
        at = win + windowMs
      else
        at = sliding_window_at(win + windowMs, windowMs, room2, cur, 0, cost, limit)
      end
    end
    r.retryAfterMs = at - now
    if r.retryAfterMs < 0 then
      r.retryAfterMs = 0
    end
  end

  local cur2 = cur + cost
  r.chargedRemaining = whole(limit - (est + cost), limit)
  r.chargedResetMs = win + 2 * windowMs - now
  r.key, r.win, r.cur2, r.prev, r.write = key, win, cur2, prev, sliding_window_write
end

-- ==== settle: the settle script only (embed-lua.mjs leaves it out of decide) ====

-- Settle (lua/settle.lua): the count of the window the reservation was charged in (the window
-- of reservedAtMs) is the state's current one, or its previous one once the state moved on a
-- window; it gets deltaUnits (never below 0, up to a debt of one limit). Older: nothing.
local function sliding_window_settled(units, delta, limit)
  local next = units + delta
  if next < 0 then
    next = 0
  end
  local most = settle_ceiling(units, limit)
  if next > most then
    return most
  end
  return next
end

SETTLES['sliding-window'] = function(value, now, limit, windowMs, intervalMs, delta, reservedAt)
  local start, cur, prev = tagged3(value, TAG_SLIDING_WINDOW)
  if start == nil then
    return nil
  end
  local keepMs = start + 2 * windowMs - now
  -- Both windows are over: the key is as good as expired, nothing to settle.
  if keepMs <= 0 then
    return nil
  end
  local win = floor(reservedAt / windowMs) * windowMs
  if start == win then
    cur = sliding_window_settled(cur, delta, limit)
  elseif start == win + windowMs then
    prev = sliding_window_settled(prev, delta, limit)
  else
    return nil
  end
  return 'w' .. fmt(start) .. '|' .. fmt(cur) .. '|' .. fmt(prev), keepMs
end
