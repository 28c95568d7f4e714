-- Fixed window: one counter per epoch-aligned window. The cheapest algorithm; a client
-- can spend `limit` at the end of one window and `limit` again at the start of the next
-- (the documented boundary burst).
--
-- State (one Redis string): "<window>|<count>"
--   window  window number, floor(nowMs / windowMs)
--   count   units admitted in that window
--   The design puts the window number in the key; here it lives in the value because the
--   caller builds keys before the script reads Redis TIME, so only the script knows the
--   current window. One key per policy also means one key to reset and no stale windows.
-- Parameters: limit (units per window), windowMs (window length, ms),
--   cost (units, any positive number; fractions are summed like whole units).
-- Clock: the window never moves back (max of the stored and the current window number).
-- Returns (see decide.lua): allowed when count + cost <= limit (EPS slack);
--   remaining = floor(limit - count); resetMs = ms until the window ends (0 when empty);
--   retryAfterMs = ms until the window ends (0 when allowed, -1 when cost > limit:
--   never). A charge adds cost to count and writes the state with a TTL.

local function fixed_window_write(r, ttlMs)
  rcall('SET', r.key, fmt(r.win) .. '|' .. fmt(r.count2), 'PX', ttlMs)
end

ALGORITHMS['fixed-window'] = function(r, key, now, limit, windowMs, intervalMs, cost)
  local n = floor(now / windowMs)
  local win, count = n, 0
  local savedWin, savedCount = parse2(get_string(key))
  if savedWin ~= nil and savedWin >= n then
    win, count = savedWin, savedCount
  end
  local ends = (win + 1) * windowMs - now

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
