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

-- The read, the window test and `whole` are written out here rather than called (tagged2,
-- is_window_start, whole in common.lua compute the same): in the fixed-window shapes nothing else
-- names those helpers, so they are left out, and each closure left out is one less made and
-- captured on every call. The common state, this window's, is recognised by its text: the window
-- start as fmt writes it (fmt_time, reused by the write) between the tag and the bar, so only the
-- count is parsed; any other state is parsed in full as before.
ALGORITHMS['fixed-window'] = function(r, key, saved, now, limit, windowMs, intervalMs, cost)
  local win, count = floor(now / windowMs) * windowMs, 0
  if saved ~= nil and byte(saved, 1) == TAG_FIXED_WINDOW then
    local text = fmt_time(win)
    local bar = #text + 2
    if byte(saved, bar) == 124 and sub(saved, 2, bar - 1) == text then
      -- This window's state: its count (nil when not a number, a second bar included: fresh).
      count = tonumber(sub(saved, bar + 1)) or 0
    else
      bar = find(saved, '|', 2, true)
      if bar ~= nil then
        local savedStart, savedCount = tonumber(sub(saved, 2, bar - 1)), tonumber(sub(saved, bar + 1))
        -- A later window start of this length (time went back) is kept; is_window_start, inline.
        if savedStart ~= nil and savedCount ~= nil and (savedStart == win
            or (savedStart > win and floor(savedStart / windowMs + 0.5) * windowMs == savedStart)) then
          win, count = savedStart, savedCount
        end
      end
    end
  end
  local ends = win + windowMs - now

  r.allowed = count + cost <= limit + EPS
  -- whole(limit - count, limit) and whole(limit - count2, limit), inline.
  local most = floor(limit)
  local left = floor(limit - count + EPS)
  if left < 0 then
    left = 0
  elseif left > most then
    left = most
  end
  r.remaining = left
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
  left = floor(limit - count2 + EPS)
  if left < 0 then
    left = 0
  elseif left > most then
    left = most
  end
  r.chargedRemaining = left
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
