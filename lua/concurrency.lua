-- Concurrency: at most `limit` requests in flight per key, each holding a slot for a lease.
--
-- State (one Redis sorted set, the only algorithm whose state is not a string): member = a
--   slot id (StoreEntry.slotId, unique per check), score = the time its lease runs out, in ms
--   (nowMs + windowMs when taken or renewed; the script's clock: Redis TIME, or the explicit
--   time of a test). A slot is live while its score > nowMs; an expired one belonged to a holder
--   that neither released nor renewed it (it died), and a consuming check removes it.
--   The key's TTL covers its latest score + 1 ms, so a key whose slots all ran out vanishes. A key
--   whose slots all ran out more than 1 ms ago is as good as gone (its TTL says so; with an explicit
--   time, Redis's own clock keeps it): its slots are not counted as reclaimed, as MemoryStore drops it.
--   A string at the key (another algorithm's state) or any other type reads as no slots and is
--   replaced by the first charge.
-- Parameters: limit (slots), windowMs (the policy's leaseMs: a slot's lease), cost (always 1:
--   decide.lua takes '1@<slotId>'), slot (the slotId in mode 'consume', nil in mode 'peek').
-- Mode 'consume' removes the expired slots (ZREMRANGEBYSCORE -inf nowMs) before counting, whether
--   or not the decision charges, and reports how many in `reclaimed` (decide.lua's fifth reply
--   item); mode 'peek' counts the live slots only and writes nothing.
-- Returns (see decide.lua): allowed when live + 1 <= limit; remaining = limit - live;
--   resetMs = ms until the latest live slot runs out (0 when none); retryAfterMs = ms until the
--   earliest live slot runs out, at least 1 (an upper bound: a holder may release sooner).
--   A charge (phase 2, with the decision's other entries) adds the slot with score
--   nowMs + windowMs (ZADD) and sets the TTL (PEXPIRE) to cover the latest score.

local function concurrency_write(r, ttlMs)
  if r.foreign then
    rcall('DEL', r.key)
  end
  rcall('ZADD', r.key, fmt(r.expiry), r.slot)
  rcall('PEXPIRE', r.key, ttlMs)
end

ALGORITHMS['concurrency'] = function(r, key, saved, now, limit, windowMs, intervalMs, cost, slot)
  local live, reclaimed, latest, foreign = 0, 0, nil, saved ~= nil
  if not foreign then
    local top = rpcall('ZRANGE', key, -1, -1, 'WITHSCORES')
    if top.err ~= nil then
      foreign = true
    elseif top[2] ~= nil then
      local latestAll = tonumber(top[2])
      if latestAll > now then
        latest = latestAll
      end
      local nowText = fmt(now)
      if slot ~= nil then
        reclaimed = rcall('ZREMRANGEBYSCORE', key, '-inf', nowText)
        if now > latestAll + 1 then
          reclaimed = 0
        end
        if latest ~= nil then
          live = rcall('ZCARD', key)
        end
      elseif latest ~= nil then
        live = rcall('ZCOUNT', key, '(' .. nowText, '+inf')
      end
    end
  end

  r.allowed = live + 1 <= limit
  r.remaining = whole(limit - live, limit)
  r.resetMs = 0
  if latest ~= nil then
    r.resetMs = latest - now
  end
  r.retryAfterMs = 0
  if not r.allowed and live == 0 then
    -- A limit below one slot: never.
    r.retryAfterMs = -1
  elseif not r.allowed then
    local first = rcall('ZRANGEBYSCORE', key, '(' .. fmt(now), '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
    local wait = tonumber(first[2]) - now
    if wait < 1 then
      wait = 1
    end
    r.retryAfterMs = wait
  end
  local expiry = now + windowMs
  r.chargedRemaining = whole(limit - (live + 1), limit)
  if latest ~= nil and latest > expiry then
    r.chargedResetMs = latest - now
  else
    r.chargedResetMs = expiry - now
  end
  r.key, r.slot, r.expiry, r.foreign, r.reclaimed, r.write = key, slot, expiry, foreign, reclaimed, concurrency_write
end

-- ==== settle: the settle script only (embed-lua.mjs leaves it out of decide) ====

-- A slot is not a number of units: nothing to settle (lua/settle.lua replies 0).
SETTLES['concurrency'] = function()
  return nil
end
