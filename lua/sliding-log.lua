-- Sliding log: exact rolling window over a log of admitted units. Memory grows with the
-- limit (one sorted-set member per admitted unit still in the window).
--
-- State (one Redis sorted set): one member per admitted unit, score = admission time in
--   ms, member "<nowMs>:<n>" (unique: n counts up, ZADD NX skips taken names).
--   A member is live while score > nowMs - windowMs.
-- Parameters: limit (units per rolling window), windowMs (window length, ms),
--   cost (units, a positive WHOLE number: a cost of n adds n members).
-- Clock: live members are counted against nowMs; when time goes backwards more members
--   count as live, so it never creates capacity.
-- Returns (see decide.lua): allowed when live + cost <= limit; remaining = limit - live;
--   resetMs = ms until the newest member leaves the window; retryAfterMs = ms until
--   enough of the oldest members have left (0 when allowed, -1 when cost > limit:
--   never). A charge drops members that left the window, adds cost members at nowMs
--   and sets a TTL. Reads only (ZCOUNT, ZRANGE...) when nothing is charged.

local function sliding_log_write(r, ttlMs)
  local key, foreign, since, now, live, cost = r.key, r.foreign, r.since, r.now, r.live, r.cost
  if foreign then
    redis.call('DEL', key)
  else
    redis.call('ZREMRANGEBYSCORE', key, '-inf', fmt(since))
  end
  local score = fmt(now)
  local n = live
  local added = 0
  while added < cost do
    local args = {}
    local batch = math.min(cost - added, 1000)
    for _ = 1, batch do
      n = n + 1
      args[#args + 1] = score
      args[#args + 1] = score .. ':' .. n
    end
    added = added + redis.call('ZADD', key, 'NX', unpack(args))
  end
  redis.call('PEXPIRE', key, ttlMs)
end

ALGORITHMS['sliding-log'] = function(key, now, limit, windowMs, intervalMs, cost)
  local since = now - windowMs
  local live = 0
  local foreign = false
  local ok, counted = pcall(redis.call, 'ZCOUNT', key, '(' .. fmt(since), '+inf')
  if ok then
    live = counted
  else
    foreign = true
  end
  local newest = nil
  if live > 0 then
    newest = tonumber(redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2])
  end

  -- Every field up front: one table allocation, no rehash as the fields are filled in.
  local r = {
    allowed = live + cost <= limit, remaining = 0, resetMs = 0, retryAfterMs = 0,
    chargedRemaining = 0, chargedResetMs = 0, key = key, write = false, foreign = false, since = 0, now = 0, live = 0, cost = 0,
  }
  r.remaining = whole(limit - live, limit)
  if live > 0 then
    r.resetMs = newest + windowMs - now
  else
    r.resetMs = 0
  end
  if r.allowed then
    r.retryAfterMs = 0
  elseif cost > limit then
    r.retryAfterMs = -1
  else
    local k = live + cost - limit
    local oldest = redis.call('ZRANGEBYSCORE', key, '(' .. fmt(since), '+inf', 'WITHSCORES', 'LIMIT', k - 1, 1)
    r.retryAfterMs = tonumber(oldest[2]) + windowMs - now
  end

  local newest2 = now
  if newest ~= nil and newest > now then
    newest2 = newest
  end
  r.chargedRemaining = whole(limit - (live + cost), limit)
  r.chargedResetMs = newest2 + windowMs - now
  r.key, r.foreign, r.since, r.now, r.live, r.cost = key, foreign, since, now, live, cost
  r.write = sliding_log_write
  return r
end
