-- Sluice decide script: one or more decisions in ONE call. Each decision covers every
-- policy that applies to one request, shadow ones included, atomically. Decisions run in
-- the order given, exactly as separate calls would, so a batch of N decisions is N
-- atomic decisions sharing one round trip, one clock reading and one reply (RedisStore
-- batches the checks issued in the same event-loop turn). Built by
-- packages/core/scripts/embed-lua.mjs as common.lua + the algorithm files + a part
-- generated from the algorithm registry (WHOLE_COSTS, MAX_LIMITS, new_result) + this file
-- (one chunk, embedded with its SHA1 for EVALSHA), once per shape (packages/core/scripts/
-- lua-shapes.mjs): the `-- #if <feature>` ... `-- #end` sections below are cut from the shapes
-- without that feature, which refuse a policy or an entry that needs it with an error reply.
--
-- KEYS     for each decision in order: the state key of each of its entries (distinct
--          within the decision), then the ban key of each entry whose policy has a ban (in
--          entry order; none for policies without one), then its request record key when it
--          has one. On Redis Cluster every key of a call shares one hash tag (one slot).
-- ARGV[1]  nowMs: '' = use Redis TIME (production; microsecond precision, fractional ms
--          kept); a number = explicit time in ms since the epoch, 0 <= nowMs < 1e13
--          (tests). With an explicit time Redis still expires keys by its own clock, so
--          written keys then get a TTL of at least EXPLICIT_TTL_FLOOR_MS and a test's
--          clock, not Redis's, decides.
-- ARGV[2]  policyCount: how many policies the call's entries use (at least 1), then five
--          per policy, policy p = 1..policyCount (sent once per call, however many
--          decisions use it):
--     algorithm   an algorithm's name (packages/core/src/algorithms/registry.ts)
--     limit       units: quota per window, or bucket capacity (positive; at most
--                 MAX_LIMITS[algorithm] where the registry sets one: 1e15 for sliding-log)
--     windowMs    window length in ms (window algorithms; positive)
--     intervalMs  ms to earn back one unit (token bucket, GCRA; positive)
--     shadow      '0' = enforced: its deny charges no entry; '1' = shadow: its deny charges
--                 no shadow entry, the enforced ones still are when they all allow (phase 2).
--                 A policy with a ban appends its ban, all whole ms:
--                 '<0|1>:<blockMs>:<violations>:<violationWindowMs>:<escalatedBlockMs>'
--                 (violations 0 = no escalation). Its entries then have a ban key each: while
--                 the ban key's block lasts the entry denies (and is never charged); in mode
--                 'consume' an entry of it that denies (not banned already) counts a violation
--                 in the ban key (a window of violationWindowMs from its first violation) and
--                 bans for blockMs, or escalatedBlockMs from the violations-th of a window on.
--                 The ban key's TTL: until the later of the block's end and the window's end.
-- Then, for each decision, either the short form, one item:
--   policies      indices into the policy table ('1'..policyCount, as written by tostring),
--                 joined by '+' when more than one ('1', '1+2'): mode 'consume', no request
--                 record, one entry per index in that order, cost 1 each (the common decision:
--                 every policy of a request charged one unit; its KEYS are the entries' state
--                 keys, then their ban keys as below). A call parses each distinct item once.
-- or the full form:
--   mode          'consume' (charge as phase 2 says) or 'peek' (never writes)
--   requestTtlMs  '' = no request record. A positive number = the decision's last KEY is
--                 the record of an idempotent request (same hash tag as its entries): in
--                 mode 'consume', when the record exists its saved reply is returned and
--                 nothing is charged again (slots aside, below); otherwise the decision runs as usual and
--                 saves its reply, allowed or denied, under the record for requestTtlMs
--                 (PX, rounded up). A record saved for a different number of entries is
--                 left alone and not replayed. A replay never admits without slots of its
--                 own: the concurrency entries the recorded decision charged are decided
--                 again with this decision's slot ids, taken all or nothing as phase 2
--                 charges (a slot held since by others denies, and the replay with it), and
--                 replied as decided now; the record stays as saved. The record expires at
--                 nowMs + requestTtlMs by the script's clock too, so an explicit nowMs sees
--                 the same lifetime as Redis TIME. Mode 'peek' never reads nor writes the
--                 record.
--   entryCount    number of entries (policies) of this decision, at least 1
--   then two per entry:
--     policy      index into the policy table (1..policyCount)
--     cost        units to charge (positive; a whole number where WHOLE_COSTS[algorithm]:
--                 sliding-log), or a lease take '<wantUnits>><leastUnits>' (0 < least <=
--                 want): charge want units, or when fewer are left as many as are left down
--                 to least (evaluated with want; when that denies, with the whole units left
--                 if at least least, else with least, so a denial says when least could
--                 pass). A decision with a request record has no lease takes.
--                 A concurrency entry (algorithm 'concurrency') costs one slot: '1@<slotId>', the
--                 slot it takes when charged (StoreEntry.slotId: anything after the first '@', at
--                 least one character), required in mode 'consume'; in mode 'peek' '1' (a slot
--                 given there is ignored). It has no short form (the short form carries no slot).
--                 Or a waiting entry '<cost>~<maxWaitMs>' (maxWaitMs positive; only a policy
--                 whose algorithm is in WAITS, from the registry: token bucket, GCRA): in mode
--                 'consume', when it denies (not banned) but its wait, ceil(retryAfterMs) and at
--                 least 1, is at most maxWaitMs, it counts as allowing in phase 2, and when
--                 charged it reserves that turn: charged now, the debt kept as time (its
--                 algorithm's write, told the turn), replied as
--                 allowed with that wait (see Reply). Not charged (another entry denies): denied
--                 as usual. Mode 'peek' never waits.
--
-- Phase 1 (per decision) evaluates every entry and writes nothing, but for a concurrency entry
-- in mode 'consume', which removes its expired slots (concurrency.lua). Phase 2 (mode
-- 'consume') charges the enforced entries when every enforced entry allows and the shadow
-- entries when every entry allows (an enforced deny charges nothing; a deny of shadow
-- entries only charges the enforced ones; one entry alone is charged when it allows), and
-- sets a TTL on every written key of ceil(ms until full) + 1, so idle keys vanish once they
-- are equivalent to a fresh key (a sliding log adds an eighth of its window, sliding-log.lua).
--
-- Reply: a flat array of integers, for each decision in order four per entry, in entry
-- order:
--   allowed       1 or 0: this entry alone would admit the cost; 2: it denies because the
--                 identity is banned (by this call's denial or an earlier one)
--   remaining     whole units left after this call (0..limit); when this entry was not
--                 charged (peek, or a deny that blocks its charge, see phase 2) the units
--                 left now
--   resetMs       ms until this entry's quota is fully restored, rounded up
--   retryAfterMs  ms until this entry could admit its cost, rounded up; 0 when allowed,
--                 -1 when never (cost > limit); when banned, the rest of the block if longer;
--                 allowed 1 with retryAfterMs > 0: a waiting entry reserved its turn, this
--                 many ms from now (the verdict's waitMs)
--   and for a lease take a fifth item:
--   chargedUnits  the units charged (0 when this entry was not charged)
--   and for a concurrency entry a fifth item:
--   reclaimed     the expired slots (their holder neither released nor renewed them) this
--                 call removed from the entry's key; 0 in mode 'peek'
-- Bad arguments anywhere return an error reply before anything is read or written.


local HUGE = math.huge

-- A positive finite number from an argument, else nil (the parse of policies and the common costs
-- tests the same inline, without a call).
local function positive(value)
  local n = tonumber(value)
  if n == nil or n ~= n or n <= 0 or n == HUGE then
    return nil
  end
  return n
end

-- A policy's three numbers, converted by the arithmetic under pcall: one strtod per number where
-- tonumber makes two; a string that is no number raises, and pcall answers false (tonumber: nil).
local function numbers3(a, b, c)
  return a + 0, b + 0, c + 0
end

-- Validation pass: every argument is parsed before anything is read or written, so an
-- error reply never leaves a batch half applied. Policies are parsed once per call.
-- Keyed by the index as sent ('1', '2', ...), so entries find theirs without tonumber.
local policies = {}
-- Some policy of this call has a ban: the ban bookkeeping below exists only then, so a call
-- without bans runs what it ran before bans existed, plus one test per decision and entry.
-- #if bans
local anyBan = false
-- #end
-- #if leases
-- The lease takes, by entry number: their least units (false: no lease take in the call).
local lease = false
-- #end
-- #if slots
-- The concurrency entries' slot ids, by entry number (false: no concurrency entry in the call).
local slots = false
-- #end
-- #if waits
-- The waiting entries, by entry number: their maxWaitMs (false: no waiting entry in the call).
local waits = false
-- #end
-- The common count ('1') is compared, not parsed: tonumber of a string costs two strtod calls.
local policyCount = ARGV[2] == '1' and 1 or tonumber(ARGV[2])
if policyCount == nil or policyCount < 1 or policyCount ~= floor(policyCount) then
  return redis.error_reply('ERR sluice: policyCount must be a positive integer')
end
if #ARGV < 2 + 5 * policyCount then
  return redis.error_reply('ERR sluice: expected ' .. (2 + 5 * policyCount) .. ' arguments for the policies, got ' .. #ARGV)
end
for p = 1, policyCount do
  local base = 2 + 5 * (p - 1)
  local name = ARGV[base + 1]
  local algorithm = ALGORITHMS[name]
  if algorithm == nil then
    return redis.error_reply('ERR sluice: unknown algorithm in policy ' .. p)
  end
  -- Positive and finite, as `positive` (NaN fails every comparison).
  local ok, limit, windowMs, intervalMs = pcall(numbers3, ARGV[base + 2], ARGV[base + 3], ARGV[base + 4])
  if not ok
      or not (limit > 0 and limit < HUGE and windowMs > 0 and windowMs < HUGE and intervalMs > 0 and intervalMs < HUGE) then
    return redis.error_reply('ERR sluice: limit, windowMs and intervalMs must be positive numbers (policy ' .. p .. ')')
  end
  local maxLimit = MAX_LIMITS[name]
  if maxLimit ~= nil and limit > maxLimit then
    return redis.error_reply('ERR sluice: ' .. name .. ' limit must be at most ' .. fmt(maxLimit) .. ' (policy ' .. p .. ')')
  end
  local shadow = ARGV[base + 5]
  -- #if bans
  local ban = false
  if shadow ~= '0' and shadow ~= '1' then
    local flag, blockMs, violations, windowMs, escalatedMs = string.match(shadow, '^([01]):(%d+):(%d+):(%d+):(%d+)$')
    if flag == nil or tonumber(blockMs) < 1 or tonumber(escalatedMs) < tonumber(blockMs) then
      return redis.error_reply('ERR sluice: shadow must be 0 or 1, then optionally a ban (policy ' .. p .. ')')
    end
    shadow = flag
    anyBan = true
    ban = { blockMs = tonumber(blockMs), violations = tonumber(violations), windowMs = tonumber(windowMs),
      escalatedMs = tonumber(escalatedMs) }
  end
  -- #else
  if shadow ~= '0' and shadow ~= '1' then
    return redis.error_reply('ERR sluice: shadow must be 0 or 1; this shape of the decide script takes no ban (policy ' .. p .. ')')
  end
  -- #end
  -- #if not shadow
  if shadow ~= '0' then
    return redis.error_reply('ERR sluice: this shape of the decide script takes no shadow policy (policy ' .. p .. ')')
  end
  -- #end
  -- The index as sent: one byte for the first nine (sub, not tostring's printf).
  policies[p < 10 and sub('123456789', p, p) or tostring(p)] = { algorithm = algorithm, name = name, wholeCosts = WHOLE_COSTS[name] == true,
    limit = limit, windowMs = windowMs, intervalMs = intervalMs,
    -- #if shadow
    shadow = shadow == '1',
    -- #end
    -- #if bans
    ban = ban,
    -- #end
    -- #if slots
    slots = name == 'concurrency',
    -- #end
  }
end

-- The decisions, parsed into two flat arrays (no table per decision or entry). Decision d
-- is dec[5d-4 .. 5d]: consume (mode 'consume'), recordTtl (false: no record), count (of
-- entries), key (index of its first KEY), entry (index of its first entry). Entry e is
-- ent[2e-1] (its policy) and ent[2e] (its cost).
-- Sized for the first decision and entry up front: no rehash while the first ones are stored.
local dec, ent = { false, false, false, false, false }, { false, false }
-- The short forms with '+' seen in this call, by item: their policies in order (parsed once);
-- false until the first one (a call of one-policy decisions makes no table for them).
local shorts = false
-- The ban bookkeeping, only in a call some policy of which has a ban (false otherwise; one
-- table, so the closures below capture one more upvalue, not one per field): keys[d],
-- how many ban keys decision d has (only when it has any); per entry position of the decision
-- being decided, its ban key, its state (untilMs, violations, windowStartMs; untilMs false when
-- absent) and whether a ban is in force; read and reply, the functions further down.
-- #if bans
local B = anyBan and { keys = {}, key = {}, untilMs = {}, count = {}, start = {}, banned = {} }
-- #end
local nDecisions, nEntries = 0, 0
local argc = #ARGV
local argi, keyi = 3 + 5 * policyCount, 1
while argi <= argc do
  local d = nDecisions + 1
  local mode = ARGV[argi]
  -- What each form leaves for the shared record below.
  local consume, recordTtl, count, firstEntry, nextArg
  local short = policies[mode]
  -- #if slots
  if short ~= nil and short.slots then
    return redis.error_reply('ERR sluice: a concurrency entry takes the full form with its slot (decision ' .. d .. ')')
  end
  -- #end
  if short ~= nil then
    -- The short form: consume 1 unit of one policy, no request record.
    nEntries = nEntries + 1
    ent[2 * nEntries - 1], ent[2 * nEntries] = short, 1
    consume, recordTtl, count, firstEntry, nextArg = true, false, 1, nEntries, argi + 1
    -- #if bans
    if anyBan and short.ban then
      B.keys[d] = 1
    end
    -- #end
  elseif find(mode, '+', 1, true) then
    -- The short form of several policies: consume 1 unit of each, no request record.
    -- Its policies, parsed on first sight of the item (inline: a function here would be a closure
    -- made on every call).
    local list = shorts and shorts[mode]
    if not list then
      list = {}
      local from = 1
      while true do
        local plus = find(mode, '+', from, true)
        local policy = policies[sub(mode, from, (plus or 0) - 1)]
        if policy == nil then
          return redis.error_reply('ERR sluice: unknown policy index in entry ' .. (#list + 1) .. ' (decision ' .. d .. ')')
        end
        list[#list + 1] = policy
        -- #if slots
        if policy.slots then
          list.slots = true
        end
        -- #end
        if plus == nil then
          break
        end
        from = plus + 1
      end
      shorts = shorts or {}
      shorts[mode] = list
    end
    -- #if slots
    if list.slots then
      return redis.error_reply('ERR sluice: a concurrency entry takes the full form with its slot (decision ' .. d .. ')')
    end
    -- #end
    count = #list
    consume, recordTtl, firstEntry, nextArg = true, false, nEntries + 1, argi + 1
    for i = 1, count do
      local policy = list[i]
      nEntries = nEntries + 1
      ent[2 * nEntries - 1], ent[2 * nEntries] = policy, 1
      -- #if bans
      if anyBan and policy.ban then
        B.keys[d] = (B.keys[d] or 0) + 1
      end
      -- #end
    end
  else
    if mode ~= 'consume' and mode ~= 'peek' then
      return redis.error_reply('ERR sluice: mode must be consume or peek (decision ' .. d .. ')')
    end
    recordTtl = false
    local ttlArg = ARGV[argi + 1]
    if ttlArg ~= nil and ttlArg ~= '' then
      -- #if records
      recordTtl = positive(ttlArg)
      if recordTtl == nil then
        return redis.error_reply('ERR sluice: requestTtlMs must be a positive number (decision ' .. d .. ')')
      end
      -- #else
      return redis.error_reply('ERR sluice: this shape of the decide script takes no request record (decision ' .. d .. ')')
      -- #end
    end
    -- The common values ('1') are compared, not parsed: an interned string compares in one step.
    count = 1
    local countArg = ARGV[argi + 2]
    if countArg ~= '1' then
      count = tonumber(countArg)
      if count == nil or count < 1 or count ~= floor(count) then
        return redis.error_reply('ERR sluice: entryCount must be a positive integer (decision ' .. d .. ')')
      end
    end
    local first = argi + 3
    if argc < first - 1 + 2 * count then
      return redis.error_reply('ERR sluice: expected ' .. (first - 1 + 2 * count) .. ' arguments, got ' .. argc)
    end
    firstEntry = nEntries + 1
    for i = 1, count do
      local base = first + 2 * (i - 1)
      local policy = policies[ARGV[base]] or policies[tostring(tonumber(ARGV[base]))]
      if policy == nil then
        return redis.error_reply('ERR sluice: unknown policy index in entry ' .. i .. ' (decision ' .. d .. ')')
      end
      local cost = 1
      local costArg = ARGV[base + 1]
      -- #if slots
      if policy.slots then
        -- A concurrency entry: '1@<slotId>', or '1' in mode 'peek'.
        local slot = string.match(costArg, '^1@(.+)$')
        if slot == nil and (costArg ~= '1' or mode == 'consume') then
          return redis.error_reply('ERR sluice: a concurrency entry costs 1@<slotId> (1 in mode peek) (entry ' .. i .. ', decision ' .. d .. ')')
        end
        slots = slots or {}
        slots[nEntries + 1] = mode == 'consume' and slot
        costArg = '1'
      end
      -- #end
      if costArg ~= '1' then
        cost = tonumber(costArg)
        if cost ~= nil and not (cost > 0 and cost < HUGE) then
          cost = nil
        end
        -- #if waits
        if cost == nil and find(costArg, '~', 1, true) then
          -- A waiting entry: '<cost>~<maxWaitMs>'.
          local units, most = string.match(costArg, '^([^~]+)~([^~]+)$')
          cost, most = positive(units or ''), positive(most or '')
          if cost == nil or most == nil or not find(WAITS, ' ' .. policy.name .. ' ', 1, true) then
            return redis.error_reply('ERR sluice: a waiting cost must be cost~maxWaitMs, both positive, on a token-bucket or gcra policy (entry ' .. i .. ', decision ' .. d .. ')')
          end
          waits = waits or {}
          waits[nEntries + 1] = most
        end
        -- #end
        -- #if leases
        if cost == nil then
          -- A lease take: '<wantUnits>><leastUnits>'.
          local want, least = string.match(costArg, '^([^>]+)>([^>]+)$')
          cost, least = positive(want or ''), positive(least or '')
          if cost == nil or least == nil or least > cost or recordTtl then
            return redis.error_reply('ERR sluice: cost must be a positive number, or a lease take want>least with 0 < least <= want and no request record (entry ' .. i .. ', decision ' .. d .. ')')
          end
          if policy.wholeCosts and least ~= floor(least) then
            return redis.error_reply('ERR sluice: ' .. policy.name .. ' cost must be a whole number (entry ' .. i .. ', decision ' .. d .. ')')
          end
          lease = lease or {}
          lease[nEntries + 1] = least
        end
        -- #else
        if cost == nil then
          return redis.error_reply('ERR sluice: cost must be a positive number (entry ' .. i .. ', decision ' .. d .. ')')
        end
        -- #end
      end
      if policy.wholeCosts and cost ~= floor(cost) then
        return redis.error_reply('ERR sluice: ' .. policy.name .. ' cost must be a whole number (entry ' .. i .. ', decision ' .. d .. ')')
      end
      nEntries = nEntries + 1
      ent[2 * nEntries - 1], ent[2 * nEntries] = policy, cost
      -- #if bans
      if anyBan and policy.ban then
        B.keys[d] = (B.keys[d] or 0) + 1
      end
      -- #end
    end
    consume, nextArg = mode == 'consume', first + 2 * count
  end
  local at = 5 * d
  dec[at - 4], dec[at - 3], dec[at - 2], dec[at - 1], dec[at] = consume, recordTtl, count, keyi, firstEntry
  nDecisions = d
  keyi = keyi + count
  -- #if bans
  if anyBan then
    keyi = keyi + (B.keys[d] or 0)
  end
  -- #end
  -- #if records
  if recordTtl then
    keyi = keyi + 1
  end
  -- #end
  argi = nextArg
end
if nDecisions == 0 then
  return redis.error_reply('ERR sluice: expected at least one decision')
end
if keyi - 1 ~= #KEYS then
  return redis.error_reply('ERR sluice: expected ' .. (keyi - 1) .. ' keys, got ' .. #KEYS)
end

local now, explicit = script_now(ARGV[1])
if now == nil then
  return redis.error_reply(BAD_NOW)
end

local reply = {}
local nReply = 0
-- Per entry position of the decision being decided: the units its lease take charges if charged.
-- #if leases
local takes = lease and {}
-- #end
-- Per entry position of the decision being decided: its reserved turn's wait if charged (false:
-- it does not wait); read only for a waiting entry.
-- #if waits
local turns = waits and {}
-- #end

-- One result table per entry position, reused by every decision of the call (an
-- algorithm fills every field it reads back): nothing is allocated per decision.
local results = {}
-- #if bans
if anyBan then
  -- Reads the ban key of entry position i (state 'b<untilMs>|<violations>|<windowStartMs>',
  -- tag byte 98); true when its ban is in force.
  B.read = function(i, key)
    local untilMs, violations, startMs = tagged3(get_string(key), 98)
    B.key[i], B.untilMs[i], B.count[i], B.start[i] = key, untilMs or false, violations, startMs
    local banned = untilMs ~= nil and now < untilMs
    B.banned[i] = banned
    return banned
  end

  -- The reply items of entry position i of a policy with a ban (written at reply[at + 1..4]):
  -- banned while its ban lasts; when `violation` (a denial in mode 'consume', not banned) the
  -- violation is counted and the ban written. Banned: allowed 2, retryAfterMs the rest of the
  -- block when that is longer (-1, never, stays).
  B.reply = function(ban, i, violation, at)
    local untilMs
    if B.banned[i] then
      untilMs = B.untilMs[i]
    elseif violation then
      local violations, startMs = 1, now
      if B.untilMs[i] and now - B.start[i] < ban.windowMs then
        violations, startMs = B.count[i] + 1, B.start[i]
      end
      local blockMs = ban.blockMs
      if ban.violations > 0 and violations >= ban.violations then
        blockMs = ban.escalatedMs
      end
      untilMs = now + blockMs
      local lastMs = untilMs
      if ban.violations > 0 and startMs + ban.windowMs > lastMs then
        lastMs = startMs + ban.windowMs
      end
      local ttl = ceil(lastMs - now) + 1
      if explicit and ttl < EXPLICIT_TTL_FLOOR_MS then
        ttl = EXPLICIT_TTL_FLOOR_MS
      end
      if ttl > MAX_TTL_MS then
        ttl = MAX_TTL_MS
      end
      rcall('SET', B.key[i], 'b' .. fmt(untilMs) .. '|' .. violations .. '|' .. fmt(startMs), 'PX', ttl)
    else
      return
    end
    reply[at + 1] = 2
    -- Whole ms, rounded up; half a microsecond off first, so the rounding error of untilMs - now
    -- (about 2e-4 ms at today's epoch) never adds a millisecond (times are whole microseconds).
    local restMs = ceil(untilMs - now - 0.0005)
    local retry = reply[at + 4]
    if retry ~= -1 and retry < restMs then
      reply[at + 4] = restMs
    end
  end
end
-- #end

-- A replayed decision's slots (see requestTtlMs): a slot is held by the check that took it, so the
-- replay of a decision that took slots takes slots of its own now (its entries' slot ids), all or
-- nothing as phase 2 charges them, and replies each of those entries as it is decided now (allowed
-- with the slot taken, or denied: the replay then admits nothing). `start` is where the saved reply
-- items of the decision begin in `reply`: four per entry, five for a concurrency entry.
local function replay_slots(start, e0, count, keyBase)
  -- Where each entry's saved items begin, and the recorded charge: every entry allowed, every
  -- enforced one allowed (phase 2's rule).
  local all, enforced, at, itemAt = true, true, start, {}
  for i = 1, count do
    local policy = ent[2 * (e0 + i) - 1]
    itemAt[i] = at
    if reply[at + 1] ~= 1 then
      all = false
      enforced = enforced and policy.shadow
    end
    at = at + 4
    if policy.slots then
      at = at + 1
    end
  end
  -- The concurrency entries the recorded decision charged, decided again now with their new slots.
  local taken, nowAll, nowEnforced = {}, true, true
  for i = 1, count do
    local policy = ent[2 * (e0 + i) - 1]
    if policy.slots and ((policy.shadow and all) or (not policy.shadow and enforced)) then
      local r = results[i]
      if r == nil then
        r = new_result()
        results[i] = r
      end
      local key = KEYS[keyBase + i - 1]
      policy.algorithm(r, key, get_string(key), now, policy.limit, policy.windowMs, policy.intervalMs, 1, slots[e0 + i])
      taken[#taken + 1] = i
      if not r.allowed then
        nowAll = false
        nowEnforced = nowEnforced and policy.shadow
      end
    end
  end
  for k = 1, #taken do
    local i = taken[k]
    local r, policy, at = results[i], ent[2 * (e0 + i) - 1], itemAt[i]
    local remaining, resetMs = r.remaining, r.resetMs
    if (policy.shadow and nowAll) or (not policy.shadow and nowEnforced) then
      local ttl = ceil(r.chargedResetMs) + 1
      if explicit and ttl < EXPLICIT_TTL_FLOOR_MS then
        ttl = EXPLICIT_TTL_FLOOR_MS
      end
      r.write(r, ttl)
      remaining, resetMs = r.chargedRemaining, r.chargedResetMs
    end
    reply[at + 1] = r.allowed and 1 or 0
    reply[at + 2] = remaining
    reply[at + 3] = ceil(resetMs)
    reply[at + 4] = ceil(r.retryAfterMs - WAIT_NOISE_MS)
    reply[at + 5] = r.reclaimed
  end
end

-- Each decision: its reply items appended to `reply`. The body runs in the chunk itself, not in a
-- function: a closure made on every call would capture a dozen of the chunk's locals, each an
-- upvalue allocated and closed per call. `repeat ... until true` lets a replayed decision end early
-- (`break`).
for d = 1, nDecisions do repeat
  local at = 5 * d
  local consume, recordTtl, count, keyBase, e0 = dec[at - 4], dec[at - 3], dec[at - 2], dec[at - 1], dec[at] - 1
  -- #if bans
  local nBans = B and B.keys[d]
  -- #end
  -- #if records
  local recordKey = nil
  if recordTtl and consume then
    recordKey = KEYS[keyBase + count + (nBans or 0)]
  end
  -- A request seen before: its saved reply, nothing decided or charged. The record is
  -- "<expiresAtMs>|<reply items...>"; expiresAtMs (nowMs + requestTtlMs) decides with an
  -- explicit time too, where Redis's own expiry (PX) follows its own clock.
  if recordKey ~= nil then
    local saved = get_string(recordKey)
    if saved ~= nil then
      local items = {}
      for part in string.gmatch(saved, '[^|]+') do
        items[#items + 1] = part
      end
      local expiresAt = tonumber(items[1])
      if expiresAt ~= nil and now <= expiresAt then
        -- Four items per entry, five for a concurrency entry (a request record has no lease take).
        local width = 4 * count
        -- #if slots
        for k = 1, slots and count or 0 do
          if ent[2 * (e0 + k) - 1].slots then
            width = width + 1
          end
        end
        -- #end
        if #items == 1 + width then
          local start = nReply
          for k = 2, #items do
            nReply = nReply + 1
            reply[nReply] = tonumber(items[k])
          end
          -- #if slots
          if slots then
            replay_slots(start, e0, count, keyBase)
          end
          -- #end
          break
        end
        recordKey = nil
      end
    end
  end
  -- #end

  -- Phase 1: evaluate, no writes. `all`: every entry allows; `enforced`: every enforced one.
  -- The states are read first: one GET, or one MGET for several entries (MGET answers nil, as
  -- get_string, for a key of another type).
  local all, enforced = true, true
  -- #if bans
  local nextBan = nBans and keyBase + count
  -- #end
  local values = false
  if count > 1 then
    values = rcall('MGET', unpack(KEYS, keyBase, keyBase + count - 1))
  end
  for i = 1, count do
    local r = results[i]
    if r == nil then
      -- Every field any algorithm sets, up front (new_result: the generated registry part).
      r = new_result()
      results[i] = r
    end
    local policy = ent[2 * (e0 + i) - 1]
    local key = KEYS[keyBase + i - 1]
    local saved
    if values then
      saved = values[i] or nil
    else
      -- get_string, inline: a GET that reads a value of another type as absent.
      saved = rpcall('GET', key)
      if type(saved) ~= 'string' then
        saved = nil
      end
    end
    -- #if slots
    policy.algorithm(r, key, saved, now, policy.limit, policy.windowMs, policy.intervalMs, ent[2 * (e0 + i)],
      slots and slots[e0 + i] or nil)
    -- #else
    policy.algorithm(r, key, saved, now, policy.limit, policy.windowMs, policy.intervalMs, ent[2 * (e0 + i)])
    -- #end
    -- #if leases
    local least = lease and lease[e0 + i]
    if least then
      -- A lease take: what is left when the full take is denied, down to least.
      local units = ent[2 * (e0 + i)]
      if not r.allowed then
        units = least
        if r.remaining >= least then
          units = r.remaining
        end
        policy.algorithm(r, key, saved, now, policy.limit, policy.windowMs, policy.intervalMs, units)
        if not r.allowed and units > least then
          units = least
          policy.algorithm(r, key, saved, now, policy.limit, policy.windowMs, policy.intervalMs, units)
        end
      end
      takes[i] = units
    end
    -- #end
    local ok = r.allowed
    -- #if bans
    if nBans and policy.ban then
      -- A ban in force denies, whatever the policy's state says.
      if B.read(i, KEYS[nextBan]) then
        ok = false
      end
      nextBan = nextBan + 1
    end
    -- #end
    -- #if waits
    if waits and waits[e0 + i] then
      -- A waiting entry that denies (not banned, not never) reserves its turn when its wait, in
      -- whole ms rounded up past the noise and at least 1, is at most maxWaitMs. Twin:
      -- `reservedWaitMs`.
      turns[i] = false
      if not r.allowed and consume and not (nBans and policy.ban and B.banned[i]) and r.retryAfterMs >= 0 then
        local wait = ceil(r.retryAfterMs - WAIT_NOISE_MS)
        if wait < 1 then
          wait = 1
        end
        if wait <= waits[e0 + i] then
          turns[i], ok = wait, true
        end
      end
    end
    -- #end
    if not ok then
      all = false
      -- #if shadow
      enforced = enforced and policy.shadow
      -- #else
      enforced = false
      -- #end
    end
  end

  -- Phase 2: all allow: charge all; only shadow entries deny: the enforced ones; else none.
  local chargeAll = all and consume
  -- #if shadow
  local chargeEnforced = enforced and consume and not all
  -- #end
  -- #if records
  local start = nReply
  -- #end
  for i = 1, count do
    local r = results[i]
    local remaining, resetMs = r.remaining, r.resetMs
    -- #if shadow
    local charged = chargeAll or (chargeEnforced and not ent[2 * (e0 + i) - 1].shadow)
    -- #else
    local charged = chargeAll
    -- #end
    -- #if waits
    -- A reserved turn (waiting): its wait, else false.
    local turn = waits and charged and waits[e0 + i] and turns[i]
    -- #else
    local turn = false
    -- #end
    if charged then
      local ttl = ceil(r.chargedResetMs) + 1
      if explicit and ttl < EXPLICIT_TTL_FLOOR_MS then
        ttl = EXPLICIT_TTL_FLOOR_MS
      end
      if ttl > MAX_TTL_MS then
        ttl = MAX_TTL_MS
      end
      -- Whole ms as text: Redis would write a number argument with '%.17g' (printf's slow path).
      ttl = format('%d', ttl)
      -- #if waits
      if turn then
        -- The write keeps a reserved turn's debt as time (told the policy's numbers).
        r.write(r, ttl, ent[2 * (e0 + i) - 1])
      else
        r.write(r, ttl)
      end
      -- #else
      r.write(r, ttl)
      -- #end
      remaining, resetMs = r.chargedRemaining, r.chargedResetMs
    end
    reply[nReply + 1] = r.allowed and 1 or 0
    reply[nReply + 2] = remaining
    reply[nReply + 3] = ceil(resetMs)
    reply[nReply + 4] = ceil(r.retryAfterMs - WAIT_NOISE_MS)
    -- #if waits
    if turn then
      -- Allowed with a wait: the reserved turn.
      reply[nReply + 1], reply[nReply + 4] = 1, turn
    end
    -- #end
    -- #if bans
    if nBans then
      local ban = ent[2 * (e0 + i) - 1].ban
      if ban then
        B.reply(ban, i, consume and not (r.allowed or turn), nReply)
      end
    end
    -- #end
    nReply = nReply + 4
    -- #if leases
    if lease and lease[e0 + i] then
      nReply = nReply + 1
      reply[nReply] = charged and takes[i] or 0
    end
    -- #end
    -- #if slots
    if slots and ent[2 * (e0 + i) - 1].slots then
      nReply = nReply + 1
      reply[nReply] = r.reclaimed
    end
    -- #end
  end
  -- #if records
  if recordKey ~= nil then
    local saved = fmt(now + recordTtl) .. '|' .. table.concat(reply, '|', start + 1, nReply)
    rcall('SET', recordKey, saved, 'PX', ceil(recordTtl))
  end
  -- #end
until true end
return reply
