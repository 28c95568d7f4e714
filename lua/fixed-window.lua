-- Fixed window: one counter per epoch-aligned window. The cheapest algorithm; a client
-- can spend `limit` at the end of one window and `limit` again at the start of the next
-- (the documented boundary burst).
--
-- State (one Redis string): "f<startMs>|<count>"
--   startMs  the window's start, floor(nowMs / windowMs) * windowMs (ms since the epoch)
--   count    units admitted in that window
--   The design puts the window number in the key; here it lives in the value because the
--   caller builds keys before the script reads Redis TIME, so only the script knows the
--   current window. One key per policy also means one key to reset and no stale windows.
--   The start in ms, not the window number, so a state written under another windowMs is
--   never read as a window of this one: it is read only when its start is a start of this
--   policy's windows (then every unit it counts was admitted in that window); otherwise
--   the key starts fresh. A value without the 'f' tag (another algorithm's) starts fresh.
-- Parameters: limit (units per window), windowMs (window length, ms),
--   cost (units, any positive number; fractions are summed like whole units).
-- Clock: the window never moves back (a stored window later than the current one, as
--   after time went backwards, is kept).
-- Returns (see decide.lua): allowed when count + cost <= limit (EPS slack);
--   remaining = floor(limit - count); resetMs = ms until the window ends (0 when empty);
--   retryAfterMs = ms until the window ends (0 when allowed, -1 when cost > limit:
--   never). A charge adds cost to count and writes the state with a TTL.

local function fixed_window_write(r, ttlMs)
  rcall('SET', r.key, 'f' .. fmt_time(r.win) .. '|' .. fmt(r.count2), 'PX', ttlMs)
end

ALGORITHMS['fixed-window'] = function(r, key, saved, now, limit, windowMs, intervalMs, cost)
  local win, count = floor(now / windowMs) * windowMs, 0
  local savedStart, savedCount = tagged2(saved, TAG_FIXED_WINDOW)
  if savedStart ~= nil and (savedStart == win or (savedStart > win and is_window_start(savedStart, windowMs))) then
    win, count = savedStart, savedCount
  end
  local ends = win + windowMs - now

  r.allowed = count + cost <= limit + EPS
  r.remaining = whole(limit - count, limit)
  if count > 0 then
    r.resetMs = ends
  else
    r.resetMs = 0
  end
  if r.allowed then
    r.retryAfterMs = 0
  elseif cost > limit then
    r.retryAfterMs = -1
  else
    r.retryAfterMs = ends
  end

  local count2 = count + cost
  r.chargedRemaining = whole(limit - count2, limit)
  r.chargedResetMs = ends
  r.key, r.win, r.count2, r.write = key, win, count2, fixed_window_write
end

-- ==== settle: the settle script only (embed-lua.mjs leaves it out of decide) ====

-- Settle (lua/settle.lua): in the window the reservation was charged in (the window of
-- reservedAtMs), deltaUnits added to its count (up to a debt of one limit) or taken off (never
-- below 0). Once that window is over (the state holds another), nothing.
SETTLES['fixed-window'] = function(value, now, limit, windowMs, intervalMs, delta, reservedAt)
  local start, count = tagged2(value, TAG_FIXED_WINDOW)
  local win = floor(reservedAt / windowMs) * windowMs
  -- Another window, or the reservation's window is over: nothing to settle.
  if start == nil or start ~= win or now >= win + windowMs then
    return nil
  end
  local count2 = count + delta
  if count2 < 0 then
    count2 = 0
  end
  local most = settle_ceiling(count, limit)
  if count2 > most then
    count2 = most
  end
  return 'f' .. fmt(win) .. '|' .. fmt(count2), win + windowMs - now
end
