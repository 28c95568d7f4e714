-- Sluice slots script: releases or renews concurrency slots (lua/concurrency.lua's sorted sets),
-- every slot given in ONE call (atomic). Built as common.lua + this file (no algorithm code).
--
-- KEYS     the key of each slot, in slot order (a key may repeat: several slots of one key);
--          on Redis Cluster every key of a call shares one hash tag (one slot)
-- ARGV[1]  nowMs: '' = use Redis TIME (production); a number = explicit time in ms since the
--          epoch, 0 <= nowMs < 1e13 (tests), as in decide.lua (a renewed key then gets a TTL of at
--          least EXPLICIT_TTL_FLOOR_MS)
-- ARGV[2]  mode: 'release' or 'renew'
-- Then per slot, in KEYS order: its slotId (the member), and in mode 'renew' its leaseMs (the
--   policy's lease, ms, positive).
--
-- release  ZREM of the slot (whether or not its lease ran out). Replies 1 where the slot was
--          held (its score > nowMs), else 0 (released before, reclaimed, never taken): idempotent.
-- renew    Only a slot still held (score > nowMs) gets the score nowMs + leaseMs (ZADD XX) and its
--          key a TTL (PEXPIRE) covering the key's latest score + 1 ms. A slot that ran out or is
--          gone is never taken again (it may have been counted free already). Replies 1 where
--          renewed, 0 where lost.
-- A key holding another type reads as holding no slot (0). Bad arguments return an error reply
-- before anything is read or written.


local count = #KEYS
local mode = ARGV[2]
local per = 1
if mode == 'renew' then
  per = 2
elseif mode ~= 'release' then
  return redis.error_reply('ERR sluice: mode must be release or renew')
end
if count == 0 or #ARGV ~= 2 + per * count then
  return redis.error_reply('ERR sluice: expected ' .. (2 + per * count) .. ' arguments and at least one key, got ' .. #ARGV)
end
for i = 1, count do
  local base = 2 + per * (i - 1)
  if ARGV[base + 1] == '' then
    return redis.error_reply('ERR sluice: slotId must not be empty (slot ' .. i .. ')')
  end
  if per == 2 then
    local leaseMs = tonumber(ARGV[base + 2])
    if leaseMs == nil or not (leaseMs > 0 and leaseMs < 1e13) then
      return redis.error_reply('ERR sluice: leaseMs must be a positive number of ms (slot ' .. i .. ')')
    end
  end
end

local now, explicit = script_now(ARGV[1])
if now == nil then
  return redis.error_reply(BAD_NOW)
end

local reply = {}
for i = 1, count do
  local key, slot = KEYS[i], ARGV[2 + per * (i - 1) + 1]
  local score = rpcall('ZSCORE', key, slot)
  local held = type(score) == 'string' and tonumber(score) > now
  reply[i] = 0
  if mode == 'release' then
    if type(score) == 'string' then
      rcall('ZREM', key, slot)
    end
    if held then
      reply[i] = 1
    end
  elseif held then
    local expiry = now + tonumber(ARGV[2 + per * (i - 1) + 2])
    rcall('ZADD', key, 'XX', fmt(expiry), slot)
    local top = rcall('ZRANGE', key, -1, -1, 'WITHSCORES')
    local ttl = math.ceil(tonumber(top[2]) - now) + 1
    if explicit and ttl < EXPLICIT_TTL_FLOOR_MS then
      ttl = EXPLICIT_TTL_FLOOR_MS
    end
    rcall('PEXPIRE', key, ttl)
    reply[i] = 1
  end
end
return reply
