-- Sluice quota script: one bucket's regional quota assignment (the Rate Limit Quota Service), a
-- client's report or departure in ONE call (atomic), so any number of servers on one Redis never
-- hand out more than the bucket's budget together. Built as common.lua + this file (script_now,
-- fmt). Its TypeScript twin is packages/core/src/quota/allocate.ts: same steps, same numbers.
--
-- KEYS[1]  the bucket's hash: field = client id, value = '<share>|<demand>|<expiresAtMs>|<gone>'
--          (share and demand in whole requests per the rule's unit; gone '1' once the client left:
--          its share still counts until it expires, as the client may spend it until its TTL)
-- ARGV[1]  nowMs: '' = Redis TIME (production); a number = an explicit time in ms since the epoch,
--          0 <= nowMs < 1e13 (tests), as in decide.lua
-- ARGV[2]  mode: 'report' or 'leave'
-- ARGV[3]  the client id (non-empty)
-- ARGV[4]  budget: the bucket's global budget, whole requests per unit, 0 <= budget < 2^53
-- ARGV[5]  demand (report): the client's requests per unit, a whole number, 0 <= demand < 1e12
-- ARGV[6]  ttlMs (report): how long the assignment lives, ms, positive
--
-- report   Drops the expired clients, then computes every live client's target (see target_of):
--          a floor of FLOOR_PERMILLE of the budget split evenly, the rest in proportion to demand
--          (or each its demand and the spare split evenly when the demand fits). The client's new
--          share is its target, capped by the budget less what every other client holds now
--          (live or gone, until it expires), so the shares held never add up to more than the
--          budget; the others move to their targets when they report. Writes the client's share,
--          demand and expiry (now + ttlMs).
-- leave    Marks the client gone: it no longer counts for targets; its share counts until it expires.
-- Reply    { share, liveClients, demandSum, heldSum }: the client's share (0 for leave), the live
--          clients, their demand and every share held, after the call.
-- Bad arguments return an error reply before anything is read or written.

local FLOOR_PERMILLE = 50

local mode = ARGV[2]
local client = ARGV[3]
local budget = tonumber(ARGV[4])
if #KEYS ~= 1 or (mode ~= 'report' and mode ~= 'leave') then
  return redis.error_reply('ERR sluice: quota needs one key and mode report or leave')
end
if client == nil or client == '' then
  return redis.error_reply('ERR sluice: quota client id must not be empty')
end
if budget == nil or budget < 0 or budget ~= floor(budget) or budget >= 9007199254740992 then
  return redis.error_reply('ERR sluice: quota budget must be a whole number from 0 to 2^53')
end
local demand, ttlMs = 0, 0
if mode == 'report' then
  demand = tonumber(ARGV[5])
  ttlMs = tonumber(ARGV[6])
  if demand == nil or demand < 0 or demand ~= floor(demand) or demand >= 1e12 then
    return redis.error_reply('ERR sluice: quota demand must be a whole number from 0 to 1e12')
  end
  if ttlMs == nil or not (ttlMs > 0 and ttlMs < 1e13) then
    return redis.error_reply('ERR sluice: quota ttlMs must be a positive number of ms')
  end
end

local now, explicit = script_now(ARGV[1])
if now == nil then
  return redis.error_reply(BAD_NOW)
end

local key = KEYS[1]
local raw = rpcall('HGETALL', key)
if type(raw) ~= 'table' then
  raw = {}
end

-- The clients held, without the expired ones (deleted) and without the caller.
local ids, shares, demands, expiries, gones = {}, {}, {}, {}, {}
local mine = nil
for i = 1, #raw, 2 do
  local id, value = raw[i], raw[i + 1]
  local share, dem, expiresAt, gone = string.match(value, '^(%d+)|(%d+)|([%d.e+]+)|([01])$')
  expiresAt = tonumber(expiresAt)
  if share == nil or expiresAt == nil or expiresAt <= now then
    rcall('HDEL', key, id)
  elseif id == client then
    mine = { tonumber(share), tonumber(dem), expiresAt, gone }
  else
    local n = #ids + 1
    ids[n], shares[n], demands[n], expiries[n], gones[n] = id, tonumber(share), tonumber(dem), expiresAt, gone == '1'
  end
end

local othersHeld, live, demandSum = 0, 0, 0
for i = 1, #ids do
  othersHeld = othersHeld + shares[i]
  if not gones[i] then
    live = live + 1
    demandSum = demandSum + demands[i]
  end
end

if mode == 'leave' then
  if mine ~= nil then
    rcall('HSET', key, client, fmt(mine[1]) .. '|' .. fmt(mine[2]) .. '|' .. fmt(mine[3]) .. '|1')
    othersHeld = othersHeld + mine[1]
  end
  return { 0, live, demandSum, othersHeld }
end

live = live + 1
demandSum = demandSum + demand

-- The client's target: floor + its part of the pool (see the header).
local floorShare = floor(budget * FLOOR_PERMILLE / (1000 * live))
local pool = budget - live * floorShare
local target
if demandSum <= pool then
  target = floorShare + demand + floor((pool - demandSum) / live)
else
  target = floorShare + floor(pool * (demand / demandSum))
end
local share = budget - othersHeld
if target < share then
  share = target
end
if share < 0 then
  share = 0
end

local expiresAt = now + ttlMs
rcall('HSET', key, client, fmt(share) .. '|' .. fmt(demand) .. '|' .. fmt(expiresAt) .. '|0')
local latest = expiresAt
for i = 1, #ids do
  if expiries[i] > latest then
    latest = expiries[i]
  end
end
local ttl = ceil(latest - now) + 1
if explicit and ttl < EXPLICIT_TTL_FLOOR_MS then
  ttl = EXPLICIT_TTL_FLOOR_MS
end
rcall('PEXPIRE', key, ttl)
return { share, live, demandSum, othersHeld + share }
