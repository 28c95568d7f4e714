-- Sliding log: exact rolling window over a log of admitted requests. Memory grows with
-- the number of requests admitted in one window (one record each, at most `limit`).
--
-- State (one Redis string): a header, then one fixed-width record per admitted request,
--   oldest first, so a binary search finds any position:
--     header  16 chars, '%16.0f': units admitted before the first record (the base)
--     record  32 chars, '%16.0f' twice: admission time in whole microseconds (nowMs
--             rounded to the microsecond, Redis TIME's own resolution), then units
--             admitted up to and including this record (cumulative, never falls)
--   A record is live while its time > nowUs - windowMs * 1000 (nowUs: nowMs in whole
--   microseconds; decide.lua keeps an explicit nowMs within [0, 1e13), so 16 digits
--   hold it). Live units = cumulative units of the last record - those of the record
--   before the first live one (or the base). Requests charged at the same time share
--   one record.
-- Cost per decision: one read (decide.lua's GET or MGET); a charge APPENDs its record (or, stamped like the newest,
--   SETRANGEs that record's units), so it does not copy the log. Expired records stay in
--   front until they are as many as the live ones; then the charge rewrites the log
--   without them (one SET), so each record is copied a bounded number of times. The
--   cumulative units are rebased to 0 in such a rewrite before they reach LOG_CUM_MAX
--   (1e15), so they stay exact integers (a policy's limit is at most that).
-- TTL: the one decide.lua computes + windowMs / LOG_TTL_SLICES (an eighth of the window),
--   set by every rewrite and by the first append in each epoch-aligned eighth of the
--   window (PEXPIRE). An append in the same eighth as the newest record needs none: the
--   TTL set then already covers its record plus a window. An idle key lives at most an
--   eighth of a window longer than its newest unit needs.
-- Parameters: limit (units per rolling window), windowMs (window length, ms),
--   cost (units, a positive WHOLE number).
-- Clock: live records are counted against nowUs. A charge is stamped max(nowUs, newest
--   live record), so records stay in order. When time goes backwards, the new units leave
--   no earlier than the newest ones and expired records still kept count as live again:
--   it never creates capacity.
-- Returns (see decide.lua): allowed when live + cost <= limit; remaining = limit - live;
--   resetMs = ms until the newest record leaves the window; retryAfterMs = ms until
--   enough of the oldest units have left (0 when allowed, -1 when cost > limit: never).
--   Reads only (no write) when nothing is charged.

local LOG_HEAD = 16
local LOG_TIME = 16
local LOG_REC = 32
local LOG_CUM_MAX = 1e15
local LOG_TTL_SLICES = 8

-- Admission time of record i (1-based), in whole microseconds.
local function log_time(v, i)
  local at = LOG_HEAD + (i - 1) * LOG_REC
  return tonumber(sub(v, at + 1, at + LOG_TIME))
end

-- Cumulative units of record i; record 0 is the header (the base).
local function log_cum(v, i)
  if i == 0 then
    return tonumber(sub(v, 1, LOG_HEAD))
  end
  local at = LOG_HEAD + i * LOG_REC
  return tonumber(sub(v, at - LOG_REC + LOG_TIME + 1, at))
end

-- One 16-character field (the header, a record's time or its units).
local function log_field(x)
  return format('%16.0f', x)
end

local function log_record(timeUs, cum)
  return log_field(timeUs) .. log_field(cum)
end

local function sliding_log_write(r, ttlMs)
  local key, v, first, n, before, cum = r.key, r.v, r.first, r.n, r.before, r.cum + r.cost
  local stamp = r.stamp
  local merge = r.newest ~= nil and r.newest == stamp
  local dead = first - 1
  local kept = n - dead
  local slackMs = ceil(r.windowMs / LOG_TTL_SLICES)
  if cum < LOG_CUM_MAX and dead < kept then
    -- In place: expired records wait for the next rewrite (they stay in order, so the
    -- binary search skips them), and the new units go to the end.
    if merge then
      rcall('SETRANGE', key, LOG_HEAD + n * LOG_REC - (LOG_REC - LOG_TIME), log_field(cum))
    else
      rcall('APPEND', key, log_record(stamp, cum))
      local sliceUs = r.windowMs * 1000 / LOG_TTL_SLICES
      if floor(stamp / sliceUs) ~= floor(r.newest / sliceUs) then
        rcall('PEXPIRE', key, ttlMs + slackMs)
      end
    end
    return
  end
  -- Rewrite without the expired records once they are as many as the live ones (so each
  -- record is copied a bounded number of times), and rebased when the units near LOG_CUM_MAX.
  local last = n
  if merge then
    last = n - 1
  end
  local value
  if cum < LOG_CUM_MAX then
    value = log_field(before)
    if last >= first then
      value = value .. sub(v, LOG_HEAD + dead * LOG_REC + 1, LOG_HEAD + last * LOG_REC)
    end
    value = value .. log_record(stamp, cum)
  else
    local parts = { log_field(0) }
    for i = first, last do
      parts[#parts + 1] = log_record(log_time(v, i), log_cum(v, i) - before)
    end
    parts[#parts + 1] = log_record(stamp, cum - before)
    value = table.concat(parts)
  end
  rcall('SET', key, value, 'PX', ttlMs + slackMs)
end

ALGORITHMS['sliding-log'] = function(r, key, saved, now, limit, windowMs, intervalMs, cost)
  -- Times in whole microseconds: Redis TIME's resolution, so exact in production. Times
  -- to come are differences of whole microseconds (+ windowMs), so a 60 s window reports
  -- exactly 60000 ms, never 60000 plus the rounding of nowMs.
  local nowUs = floor(now * 1000 + 0.5)
  local sinceUs = nowUs - windowMs * 1000
  local v = saved
  local n, base, cum, last = 0, 0, 0, nil
  if v ~= nil then
    local len = #v
    -- The header is below LOG_CUM_MAX, so '%16.0f' starts it with a space: no other
    -- algorithm's state does (see common.lua).
    if len >= LOG_HEAD + LOG_REC and (len - LOG_HEAD) % LOG_REC == 0 and byte(v, 1) == 32 then
      n = (len - LOG_HEAD) / LOG_REC
      base, cum, last = log_cum(v, 0), log_cum(v, n), log_time(v, n)
      -- Another shape (or a value Sluice did not write) reads as an empty log.
      if base == nil or cum == nil or last == nil then
        n, base, cum = 0, 0, 0
      end
    end
  end

  -- first = the first live record (n + 1 when none): most often record 1, else found by
  -- a binary search over the times. before = units admitted before it.
  local first, before, newest = n + 1, cum, nil
  if n > 0 and last > sinceUs then
    newest = last
    if n == 1 or log_time(v, 1) > sinceUs then
      first, before = 1, base
    else
      local lo, hi = 2, n
      while lo < hi do
        local mid = floor((lo + hi) / 2)
        if log_time(v, mid) > sinceUs then
          hi = mid
        else
          lo = mid + 1
        end
      end
      first, before = lo, log_cum(v, lo - 1)
    end
  end
  local live = cum - before

  r.allowed = live + cost <= limit
  r.remaining = whole(limit - live, limit)
  if newest ~= nil then
    r.resetMs = (newest - nowUs) / 1000 + windowMs
  else
    r.resetMs = 0
  end
  if r.allowed then
    r.retryAfterMs = 0
  elseif cost > limit then
    r.retryAfterMs = -1
  else
    -- The record holding the k-th oldest live unit: once it leaves, cost fits.
    local k = live + cost - limit
    local lo, hi = first, n
    while lo < hi do
      local mid = floor((lo + hi) / 2)
      if log_cum(v, mid) - before >= k then
        hi = mid
      else
        lo = mid + 1
      end
    end
    r.retryAfterMs = (log_time(v, lo) - nowUs) / 1000 + windowMs
  end

  -- A charge is stamped max(now, newest live record), so the records stay in order.
  local stamp = nowUs
  if newest ~= nil and newest > nowUs then
    stamp = newest
  end
  r.chargedRemaining = whole(limit - (live + cost), limit)
  r.chargedResetMs = (stamp - nowUs) / 1000 + windowMs
  r.v, r.n, r.first, r.before, r.cum, r.newest, r.stamp, r.cost = v, n, first, before, cum, newest, stamp, cost
  r.key, r.windowMs, r.write = key, windowMs, sliding_log_write
end

-- ==== settle: the settle script only (embed-lua.mjs leaves it out of decide) ====

-- Settle (lua/settle.lua). A refund takes units off the live records stamped at or before the
-- latest time the reservation can have been charged (reservedByMs in whole microseconds), newest
-- first: the reservation's own record first, never a record of a request admitted after it (a key
-- expired and drained anew since). Records left empty are dropped; nothing when none of them
-- holds a unit. A charge adds a record of the extra units now (merged into the newest when it is
-- stamped now or later), up to a debt of one limit. The log is rewritten with its live records
-- only, counted from 0 (a header alone: an empty log); kept an eighth of a window beyond its
-- newest unit, as decide keeps it.
SETTLES['sliding-log'] = function(value, now, limit, windowMs, intervalMs, delta, reservedAt, reserved, reservedBy)
  local len = #value
  if not (len >= LOG_HEAD and (len - LOG_HEAD) % LOG_REC == 0 and byte(value, 1) == 32) then
    return nil
  end
  local n = (len - LOG_HEAD) / LOG_REC
  local prevCum = log_cum(value, 0)
  if prevCum == nil then
    return nil
  end
  local nowUs = floor(now * 1000 + 0.5)
  local sinceUs = nowUs - windowMs * 1000
  local stamps, units, total, m = {}, {}, 0, 0
  for i = 1, n do
    local t, c = log_time(value, i), log_cum(value, i)
    if t == nil or c == nil then
      return nil
    end
    if t > sinceUs then
      m = m + 1
      stamps[m], units[m] = t, c - prevCum
      total = total + (c - prevCum)
    end
    prevCum = c
  end
  -- No live record: the key is as good as expired, nothing to settle.
  if m == 0 then
    return nil
  end
  if delta < 0 then
    local refund, taken = -delta, 0
    local byUs = floor(reservedBy * 1000 + 0.5)
    local i = m
    while i >= 1 and stamps[i] > byUs do
      i = i - 1
    end
    -- The records at or before the reservation, newest first.
    while i >= 1 and refund > 0 do
      local held = units[i]
      local take = refund
      if held < refund then
        take = held
      end
      units[i] = held - take
      refund = refund - take
      taken = taken + take
      i = i - 1
    end
    if taken == 0 then
      return nil
    end
  else
    local most = settle_ceiling(total, limit)
    local extra = delta
    if total + delta > most then
      extra = most - total
    end
    if extra <= 0 then
      return nil
    end
    if m >= 1 and stamps[m] >= nowUs then
      units[m] = units[m] + extra
    else
      m = m + 1
      stamps[m], units[m] = nowUs, extra
    end
  end
  local parts, cum, newest = { log_field(0) }, 0, nil
  for i = 1, m do
    if units[i] > 0 then
      cum = cum + units[i]
      parts[#parts + 1] = log_record(stamps[i], cum)
      newest = stamps[i]
    end
  end
  local resetMs = 0
  if newest ~= nil then
    resetMs = (newest - nowUs) / 1000 + windowMs
  end
  return table.concat(parts), resetMs + ceil(windowMs / LOG_TTL_SLICES)
end
