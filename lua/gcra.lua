-- GCRA (generic cell rate algorithm): exact rate with burst tolerance.
--
-- State (one Redis string): "g<used>|<tsMs>" (the 'g' tag: see common.lua)
--   used  units owed at tsMs; the theoretical arrival time is TAT = tsMs + used * intervalMs
--   tsMs  the time used was counted, in ms (the latest time seen; never moves back)
--   The TAT is kept as these two numbers, not as one timestamp: a single arrival time
--   counted in fractions of an interval passes 2^53 (and stops being exact) at rates
--   above about 1000/s, so the burst would no longer be exact there.
-- Parameters: limit (burst capacity, units), intervalMs (emission interval: ms per unit;
--   the time from empty to full is limit * intervalMs; windowMs is not used),
--   cost (units, any positive number).
-- Ticks: units are counted in ticks of 1/q unit, q = 10^k with k = 9 or lower so that
--   limit * q <= 2^40. A cost is ceil(cost * q - 0.001) ticks (a decimal cost such as
--   0.001 is an exact number of ticks, and never less than asked), so costs charged at
--   one instant add up exactly: exactly floor(burst / cost) requests fit, at any rate. A cost
--   that is no whole number of ticks (1/3) is charged up to a tick more; admission allows n
--   times that excess for n costs of its size (at most GCRA_ROUNDING_MAX units), so those fit
--   exactly as well.
-- Clock: when the clock has moved on since tsMs, used drains by elapsed / intervalMs
--   (never below 0: idle time never refills beyond the limit; drained, the key is
--   exactly a fresh one, as it is once expired) and is compared with a
--   slack of GCRA_DELTA_MS (2^-10 ms, about the clock's resolution) of refill, at most 0.5
--   units, as the token bucket does; a charge keeps any part of that slack it uses as
--   debt. Such a charge stores the same arrival time counted from tsMs = now - DELTA (and
--   DELTA / intervalMs units more), so a read at the same instant drains and compares
--   exactly as the charge did. At tsMs or before (time going backwards) nothing drains
--   and used is counted in whole ticks, with no slack: exact.
-- Other limits: used is read capped at limit + slack + DELTA / intervalMs (a burst cut
--   forgives what is over it), and the cap applies at tsMs, so the wait it gives holds as
--   the clock moves on: no wait exceeds limit * intervalMs by more than 2 DELTA, and a
--   client that waits the reported retryAfterMs is admitted.
-- Waiting (the write's `turn`, decide.lua): a turn reserved beyond the burst is charged now, what
--   is owed beyond the burst kept as time: "g<limit>|<turnMs>", a full burst until the turn
--   (TAT = turn + limit * intervalMs), so later checks queue behind it.
-- Returns (see decide.lua): allowed when used + cost fits the limit (see above);
--   remaining = whole units left; resetMs = TAT - now (0 when nothing is owed);
--   retryAfterMs = (used + cost - limit) * intervalMs + (tsMs - now) (0 when allowed, -1
--   when cost > limit: never). A charge writes "g<used + cost>|<tsMs>" (see Clock).

local GCRA_TICKS_MAX = 1099511627776
local GCRA_TICK_SLACK = 0.001
local GCRA_DELTA_MS = 0.0009765625
local GCRA_ROUNDING_MAX = 0.000001
local GCRA_ROUNDING_SHARE = 1000000

-- Ticks per unit for a limit (see above); divisions by 10 of a power of ten are exact.
local function gcra_ticks(limit)
  local q = 1e9
  while q > 1 and limit * q > GCRA_TICKS_MAX do
    q = q / 10
  end
  return q
end

-- `turn` (the policy table, decide.lua): a reserved turn owes more than the burst; the debt is
-- kept as time, a full burst owed until the turn (nothing drains until then), which no read
-- clamps. Twin: the module's `reserve`.
local function gcra_write(r, ttlMs, turn)
  local used = r.left
  if turn and used > turn.limit then
    rcall('SET', r.key, 'g' .. fmt(turn.limit) .. '|' .. fmt(r.ts + (used - turn.limit) * turn.intervalMs), 'PX', ttlMs)
    return
  end
  local text
  if r.exact then
    -- A whole number of ticks below 10^13: '%.13g' writes its exact decimal, the
    -- shortest that reads back as the same double.
    text = format('%.13g', used)
  else
    text = fmt(used)
  end
  rcall('SET', r.key, 'g' .. text .. '|' .. fmt_time(r.ts), 'PX', ttlMs)
end

ALGORITHMS['gcra'] = function(r, key, saved, now, limit, windowMs, intervalMs, cost)
  local q = gcra_ticks(limit)
  local lq = limit * q
  local ct = ceil(cost * q - GCRA_TICK_SLACK)
  if ct < 1 then
    ct = 1
  end
  local cu = ct / q
  local delta = GCRA_DELTA_MS / intervalMs
  local slack = delta
  if slack > 0.5 then
    slack = 0.5
  end
  local most = limit + slack + delta
  local used, ts, tat, moved = 0, now, now, false
  local savedUsed, savedTs = tagged2(saved, TAG_GCRA)
  if savedUsed ~= nil then
    used, ts = savedUsed, savedTs
    if used > most then
      used = most
    end
    if used < 0 then
      used = 0
    end
    tat = ts + used * intervalMs
    if now > ts then
      -- Drained: exactly a fresh key (as an expired one is).
      used = used - (now - ts) / intervalMs
      if used > 0 then
        moved = true
      else
        used = 0
      end
      ts = now
    end
  end

  -- At tsMs the state is counted in whole ticks (exact); once the clock has moved on, in
  -- units with the slack.
  local ticks = 0
  if used > 0 then
    ticks = ceil(used * q - GCRA_TICK_SLACK)
  end
  -- Rounding allowance: a cost that is no whole number of ticks (1/3) is charged up to a tick
  -- more; what is owed is compared as that many costs' exact sum (n costs of this size owe n
  -- times the excess), at most GCRA_ROUNDING_MAX units, so exactly floor(burst / cost) fit.
  local excess = ct - cost * q
  -- Only where rounding is a sliver of the cost: a cost below a few ticks is charged its ticks.
  if excess < 0 or excess * GCRA_ROUNDING_SHARE > ct then
    excess = 0
  end
  local allowance = (excess * (ticks + ct)) / ct
  if allowance > GCRA_ROUNDING_MAX * q then
    allowance = GCRA_ROUNDING_MAX * q
  end
  if moved then
    r.allowed = used + cu <= limit + slack + allowance / q
    r.remaining = whole(limit + slack - used, limit)
  else
    r.allowed = ticks + ct <= lq + allowance
    r.remaining = whole((lq - ticks) / q, limit)
  end
  if used > 0 and tat > now then
    r.resetMs = tat - now
  else
    r.resetMs = 0
  end
  if r.allowed then
    r.retryAfterMs = 0
  elseif cost > limit then
    r.retryAfterMs = -1
  else
    r.retryAfterMs = (used + cu - limit) * intervalMs + (ts - now)
  end

  -- The charged state, and what a read of it at this instant reports.
  local left, ts2
  if moved then
    left, ts2 = used + cu + delta, now - GCRA_DELTA_MS
    local after = left - (now - ts2) / intervalMs
    if after < 0 then
      after = 0
    end
    r.chargedRemaining = whole(limit + slack - after, limit)
  else
    left, ts2 = (ticks + ct) / q, ts
    r.chargedRemaining = whole((lq - ticks - ct) / q, limit)
  end
  r.exact = not moved and ticks + ct < 1e13
  r.chargedResetMs = ts2 + left * intervalMs - now
  r.key, r.left, r.ts, r.write = key, left, ts2, gcra_write
end

-- ==== settle: the settle script only (embed-lua.mjs leaves it out of decide) ====

-- Settle (lua/settle.lua): what is owed drained to now, then deltaUnits added (a charge) or
-- taken off (a refund, never below 0, nor above the reservation less the refill since it:
-- bucket_delta). Owed beyond the burst is a debt, kept as time: a full
-- burst owed at tsMs in the future (nothing drains until then, as after time went backwards), so
-- no read clamps it; at most one limit of it. Drained (as good as expired): nothing.
SETTLES['gcra'] = function(value, now, limit, windowMs, intervalMs, delta, reservedAt, reserved, reservedBy, wait)
  local used, ts = tagged2(value, TAG_GCRA)
  if used == nil then
    return nil
  end
  if used < 0 then
    used = 0
  end
  if now > ts then
    used = used - (now - ts) / intervalMs
    if used < 0 then
      used = 0
    end
    ts = now
  end
  if ts <= now and used <= 0 then
    return nil
  end
  delta = bucket_delta(delta, ts, intervalMs, reservedAt, reserved, reservedBy, wait)
  if delta == 0 then
    return nil
  end
  -- Units owed at now, a debt counted in.
  local owed = used + (ts - now) / intervalMs
  local next = owed + delta
  if next < 0 then
    next = 0
  end
  local most = settle_ceiling(owed, limit)
  if next > most then
    next = most
  end
  local used2, ts2 = next, now
  if next > limit then
    used2, ts2 = limit, now + (next - limit) * intervalMs
  end
  return 'g' .. fmt(used2) .. '|' .. fmt(ts2), ts2 + used2 * intervalMs - now
end
