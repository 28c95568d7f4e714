/**
 * The Lua mutants of scripts/mutate-lua.mjs: operator and constant mutations of lua/*.lua,
 * each applied alone. `find` must occur exactly once in `file` (the entry is reported
 * stale otherwise, so the list follows the scripts as they change); `replace` takes its
 * place. `explained` marks a mutant known to survive and says why it cannot (or need not)
 * be killed; every other survivor is a gap in the tests.
 */

/** @typedef {{ id: string, file: string, find: string, replace: string, explained?: string }} LuaMutant */

/** @type {LuaMutant[]} */
export const LUA_MUTANTS = [
  // common.lua: shared helpers
  {
    id: 'common/fmt-int-fraction',
    file: 'common.lua',
    find: 'if x == floor(x) and x < 9007199254740992',
    replace: 'if x < 9007199254740992',
  },
  {
    id: 'common/fmt-time-stale',
    file: 'common.lua',
    find: 'if x ~= fmt_time_at then',
    replace: 'if fmt_time_at == nil then',
  },
  {
    id: 'decide/mget-values-ignored',
    file: 'decide.lua',
    find: 'saved = values[i] or nil',
    replace: 'saved = nil',
  },
  {
    id: 'decide/short-several-first-only',
    file: 'decide.lua',
    find: 'count = #list',
    replace: 'count = 1',
  },
  { id: 'common/eps-zero', file: 'common.lua', find: 'local EPS = 1e-9', replace: 'local EPS = 0' },
  {
    id: 'common/whole-no-eps',
    file: 'common.lua',
    find: 'local r = floor(x + EPS)',
    replace: 'local r = floor(x)',
  },
  {
    id: 'common/whole-no-floor-clamp',
    file: 'common.lua',
    find: 'if r < 0 then\n    return 0',
    replace: 'if false then\n    return 0',
  },
  {
    id: 'common/whole-no-limit-clamp',
    file: 'common.lua',
    find: 'if r > most then',
    replace: 'if false then',
  },
  {
    id: 'common/fmt-no-zero-case',
    file: 'common.lua',
    find: 'if x == 0 then',
    replace: 'if false then',
    explained: `equivalent: '-0' and '0' read back as equal numbers, and no stored quantity is ever -0 (times are >= 0; a difference of equal values is +0)`,
  },
  {
    id: 'common/get-string-no-type-check',
    file: 'common.lua',
    find: "if type(value) ~= 'string' then",
    replace: 'if false then',
  },
  {
    id: 'common/parse2-accepts-three-parts',
    file: 'common.lua',
    find: "if find(rest, '|', 1, true) ~= nil then",
    replace: 'if false then',
    explained: `equivalent: with a third part the second one is not a number ('b|c'), so the value is refused all the same`,
  },
  {
    id: 'common/parse3-no-first-check',
    file: 'common.lua',
    find: 'if b == nil or a == nil then',
    replace: 'if b == nil then',
    explained: `equivalent: every caller tests the first value for nil and then treats the state as fresh, as the check does`,
  },

  // token-bucket.lua
  {
    id: 'token-bucket/backward-refill',
    file: 'token-bucket.lua',
    find: '    local elapsed = now - ts\n    if elapsed > 0 then',
    replace: '    local elapsed = now - ts\n    if elapsed ~= 0 then',
  },
  {
    id: 'token-bucket/elapsed-ge-0',
    file: 'token-bucket.lua',
    find: '    local elapsed = now - ts\n    if elapsed > 0 then',
    replace: '    local elapsed = now - ts\n    if elapsed >= 0 then',
    explained: `equivalent: with elapsed 0 the refill adds 0 tokens and sets ts to the same time`,
  },
  {
    id: 'token-bucket/full-refill-gt',
    file: 'token-bucket.lua',
    find: '      if elapsed >= (limit - tokens) * intervalMs then',
    replace: '      if elapsed > (limit - tokens) * intervalMs then',
  },
  {
    id: 'token-bucket/refill-minus',
    file: 'token-bucket.lua',
    find: '        tokens = tokens + elapsed / intervalMs',
    replace: '        tokens = tokens - elapsed / intervalMs',
  },
  {
    id: 'token-bucket/no-capacity-clamp',
    file: 'token-bucket.lua',
    find: '    end\n  end\n  if tokens > limit then\n    tokens = limit',
    replace: '    end\n  end\n  if false then\n    tokens = limit',
  },
  {
    id: 'tb-settle/backward-refill',
    file: 'token-bucket.lua',
    find: '  local elapsed = now - ts\n  if elapsed > 0 then',
    replace: '  local elapsed = now - ts\n  if elapsed ~= 0 then',
  },
  {
    id: 'tb-settle/elapsed-ge-0',
    file: 'token-bucket.lua',
    find: '  local elapsed = now - ts\n  if elapsed > 0 then',
    replace: '  local elapsed = now - ts\n  if elapsed >= 0 then',
    explained: 'equivalent: with elapsed 0 the refill adds 0 tokens and sets ts to the same time',
  },
  {
    id: 'tb-settle/full-refill-gt',
    file: 'token-bucket.lua',
    find: '  if elapsed > 0 then\n    if elapsed >= (limit - tokens) * intervalMs then',
    replace: '  if elapsed > 0 then\n    if elapsed > (limit - tokens) * intervalMs then',
  },
  {
    id: 'tb-settle/refill-minus',
    file: 'token-bucket.lua',
    find: '    else\n      tokens = tokens + elapsed / intervalMs',
    replace: '    else\n      tokens = tokens - elapsed / intervalMs',
  },
  {
    id: 'tb-settle/no-capacity-clamp',
    file: 'token-bucket.lua',
    find: '    ts = now\n  end\n  if tokens > limit then\n    tokens = limit',
    replace: '    ts = now\n  end\n  if false then\n    tokens = limit',
  },
  {
    id: 'token-bucket/slack-zero',
    file: 'token-bucket.lua',
    find: 'local slack = 0.001 / intervalMs',
    replace: 'local slack = 0',
  },
  {
    id: 'token-bucket/slack-no-cap',
    file: 'token-bucket.lua',
    find: 'if slack > 0.5 then',
    replace: 'if false then',
  },
  {
    id: 'token-bucket/allowed-gt',
    file: 'token-bucket.lua',
    find: 'r.allowed = tokens + slack >= cost',
    replace: 'r.allowed = tokens + slack > cost',
  },
  {
    id: 'token-bucket/reset-sign',
    file: 'token-bucket.lua',
    find: 'r.resetMs = (ts - now) + (limit - tokens) * intervalMs',
    replace: 'r.resetMs = (now - ts) + (limit - tokens) * intervalMs',
  },
  {
    id: 'token-bucket/never-ge',
    file: 'token-bucket.lua',
    find: 'elseif cost > limit then',
    replace: 'elseif cost >= limit then',
  },
  {
    id: 'token-bucket/retry-plus',
    file: 'token-bucket.lua',
    find: '(cost - tokens) * intervalMs',
    replace: '(cost + tokens) * intervalMs',
  },
  {
    id: 'token-bucket/charge-plus',
    file: 'token-bucket.lua',
    find: 'local left = tokens - cost',
    replace: 'local left = tokens + cost',
  },

  // gcra.lua
  {
    id: 'gcra/ticks-cap',
    file: 'gcra.lua',
    find: 'while q > 1 and limit * q > GCRA_TICKS_MAX do',
    replace: 'while q > 1 and limit * q > GCRA_TICKS_MAX * 1024 do',
  },
  {
    id: 'gcra/cost-ticks-floor',
    file: 'gcra.lua',
    find: 'local ct = ceil(cost * q - GCRA_TICK_SLACK)',
    replace: 'local ct = floor(cost * q + GCRA_TICK_SLACK)',
  },
  {
    id: 'gcra/cost-no-min-tick',
    file: 'gcra.lua',
    find: 'if ct < 1 then\n    ct = 1',
    replace: 'if false then\n    ct = 1',
  },
  {
    id: 'gcra/slack-no-cap',
    file: 'gcra.lua',
    find: 'if slack > 0.5 then',
    replace: 'if false then',
  },
  {
    id: 'gcra/no-backlog-clamp',
    file: 'gcra.lua',
    find: 'if used > most then',
    replace: 'if false then',
  },
  {
    id: 'gcra/no-idle-clamp',
    file: 'gcra.lua',
    find: '      used = most\n    end\n    if used < 0 then',
    replace: '      used = most\n    end\n    if false then',
    explained:
      'equivalent: no charge stores a negative used (left = used + cost + delta >= 0); for a foreign negative value every later read of used is guarded: ticks and resetMs count only used > 0, a drain turns a non-positive used into 0 without moving, and a denial with 0 ticks owed means cost > limit (retry -1), so it decides as a fresh key either way',
  },
  {
    id: 'gcra/backward-drain',
    file: 'gcra.lua',
    find: '    tat = ts + used * intervalMs\n    if now > ts then',
    replace: '    tat = ts + used * intervalMs\n    if now ~= ts then',
  },
  {
    id: 'gcra-settle/no-idle-clamp',
    file: 'gcra.lua',
    find: '    return nil\n  end\n  if used < 0 then',
    replace: '    return nil\n  end\n  if false then',
  },
  {
    id: 'gcra-settle/backward-drain',
    file: 'gcra.lua',
    find: '  end\n  if now > ts then\n    used = used - (now - ts) / intervalMs',
    replace: '  end\n  if now ~= ts then\n    used = used - (now - ts) / intervalMs',
  },
  {
    id: 'gcra/moved-at-zero',
    file: 'gcra.lua',
    find: 'if used > 0 then\n        moved = true',
    replace: 'if used >= 0 then\n        moved = true',
  },
  {
    id: 'gcra/ticks-no-slack',
    file: 'gcra.lua',
    find: 'ticks = ceil(used * q - GCRA_TICK_SLACK)',
    replace: 'ticks = ceil(used * q)',
  },
  {
    id: 'gcra/moved-allowed-lt',
    file: 'gcra.lua',
    find: 'r.allowed = used + cu <= limit + slack',
    replace: 'r.allowed = used + cu < limit + slack',
  },
  {
    id: 'gcra/exact-allowed-lt',
    file: 'gcra.lua',
    find: 'r.allowed = ticks + ct <= lq',
    replace: 'r.allowed = ticks + ct < lq',
  },
  {
    id: 'gcra/reset-ignores-tat',
    file: 'gcra.lua',
    find: 'if used > 0 and tat > now then',
    replace: 'if used > 0 then',
    explained:
      'equivalent: used > 0 implies tat > now in exact arithmetic (at tsMs or before, tat = tsMs + used * intervalMs > tsMs >= now; after a drain, used - (now - tsMs) / intervalMs > 0 is tat > now), so the two differ only by rounding, where tat - now lies within a few ulps of 0 and the reply ceil(resetMs) is 0 as the clamp gives',
  },
  {
    id: 'gcra/retry-minus-used',
    file: 'gcra.lua',
    find: 'r.retryAfterMs = (used + cu - limit) * intervalMs + (ts - now)',
    replace: 'r.retryAfterMs = (cu - limit) * intervalMs + (ts - now)',
  },
  {
    id: 'gcra/retry-no-ts',
    file: 'gcra.lua',
    find: 'r.retryAfterMs = (used + cu - limit) * intervalMs + (ts - now)',
    replace: 'r.retryAfterMs = (used + cu - limit) * intervalMs',
  },
  {
    id: 'gcra/charge-no-delta',
    file: 'gcra.lua',
    find: 'left, ts2 = used + cu + delta, now - GCRA_DELTA_MS',
    replace: 'left, ts2 = used + cu, now - GCRA_DELTA_MS',
  },
  {
    id: 'gcra/exact-digits',
    file: 'gcra.lua',
    find: 'r.exact = not moved and ticks + ct < 1e13',
    replace: 'r.exact = false',
  },

  // sliding-window.lua
  {
    id: 'sliding-window/no-backward-clamp',
    file: 'sliding-window.lua',
    find: 'if f < 0 then\n    f = 0',
    replace: 'if false then\n    f = 0',
  },
  {
    id: 'sliding-window/no-forward-clamp',
    file: 'sliding-window.lua',
    find: 'elseif f > 1 then',
    replace: 'elseif false then',
    explained: 'equivalent: win is at least floor(now / windowMs), so the elapsed fraction is always below 1',
  },
  {
    id: 'sliding-window/same-window-gt',
    file: 'sliding-window.lua',
    find: 'if savedStart == win or (savedStart > win and is_window_start(savedStart, windowMs)) then',
    replace: 'if savedStart == win then',
  },
  {
    id: 'sliding-window/previous-window-off',
    file: 'sliding-window.lua',
    find: 'elseif savedStart == (n - 1) * windowMs then',
    replace: 'elseif savedStart == (n - 2) * windowMs then',
  },
  {
    id: 'sliding-window/weight-flipped',
    file: 'sliding-window.lua',
    find: 'local est = prev * (1 - f) + cur',
    replace: 'local est = prev * f + cur',
  },
  {
    id: 'sliding-window/allowed-lt',
    file: 'sliding-window.lua',
    find: 'r.allowed = est + cost <= limit + EPS',
    replace: 'r.allowed = est + cost < limit + EPS',
    explained:
      'equivalent in practice: < and <= differ only when estimate + cost equals limit + 1e-9 exactly',
  },
  {
    id: 'sliding-window/reset-one-window',
    file: 'sliding-window.lua',
    find: 'r.resetMs = win + 2 * windowMs - now',
    replace: 'r.resetMs = win + windowMs - now',
  },
  {
    id: 'sliding-window/retry-weight-sign',
    file: 'sliding-window.lua',
    find: 'local at = start + windowMs * (1 - room / units)',
    replace: 'local at = start + windowMs * (1 + room / units)',
  },
  {
    id: 'sliding-window/retry-no-clamp',
    file: 'sliding-window.lua',
    find: 'if r.retryAfterMs < 0 then',
    replace: 'if false then',
    explained:
      'equivalent: decide.lua replies ceil(retryAfterMs), so the clamp is seen only for a value <= -1 ms, and none reaches it. When room < 0 the instant is at least win + windowMs, after now (now < win + windowMs always). When room >= 0 and the request is denied, prev * (1 - f) > room: the instant win + windowMs * (1 - room / prev) is after now in exact arithmetic (at or after win > now when f was clamped at 0 by a later stored window), and before it only by rounding (a few ulps of a time below 1e13 ms, under 0.01 ms); sliding_window_at then finds no room there and adds 2^-10 ms. A value in (-1, 0) ceils to -0, which Redis replies as the integer 0, as the clamp does',
  },
  {
    // Listed as equivalent until Stryker's run over algorithms/sliding-window.ts showed the defect:
    // at cur = room2 the window end was reported without the margin it may need (fixed, 8e11b29).
    id: 'sliding-window/retry-cur-le',
    file: 'sliding-window.lua',
    find: 'if cur < room2 then',
    replace: 'if cur <= room2 then',
  },

  // fixed-window.lua
  {
    id: 'fixed-window/backward-new-window',
    file: 'fixed-window.lua',
    find: 'or (savedStart > win and floor(savedStart / windowMs + 0.5) * windowMs == savedStart)) then',
    replace: ') then',
  },
  {
    id: 'fixed-window/allowed-lt',
    file: 'fixed-window.lua',
    find: 'r.allowed = count + cost <= limit + EPS',
    replace: 'r.allowed = count + cost < limit + EPS',
    explained:
      'equivalent in practice: < and <= differ only when count + cost equals limit + 1e-9 exactly, a cost no caller means (the slack is there for rounding noise)',
  },
  {
    id: 'fixed-window/ends-next-window',
    file: 'fixed-window.lua',
    find: 'local ends = win + windowMs - now',
    replace: 'local ends = win + 2 * windowMs - now',
  },
  {
    id: 'fixed-window/reset-when-empty',
    file: 'fixed-window.lua',
    find: 'if count > 0 then',
    replace: 'if count >= 0 then',
  },

  // sliding-log.lua
  {
    id: 'sliding-log/shape-no-modulo',
    file: 'sliding-log.lua',
    find: 'if len >= LOG_HEAD + LOG_REC and (len - LOG_HEAD) % LOG_REC == 0 and byte(v, 1) == 32 then',
    replace: 'if len >= LOG_HEAD + LOG_REC and byte(v, 1) == 32 then',
  },
  {
    id: 'sliding-log/live-ge',
    file: 'sliding-log.lua',
    find: 'if n > 0 and last > sinceUs then',
    replace: 'if n > 0 and last >= sinceUs then',
  },
  {
    id: 'sliding-log/search-ge',
    file: 'sliding-log.lua',
    find: 'if log_time(v, mid) > sinceUs then',
    replace: 'if log_time(v, mid) >= sinceUs then',
  },
  {
    id: 'sliding-log/allowed-lt',
    file: 'sliding-log.lua',
    find: 'r.allowed = live + cost <= limit',
    replace: 'r.allowed = live + cost < limit',
  },
  {
    id: 'sliding-log/stamp-not-monotonic',
    file: 'sliding-log.lua',
    find: 'if newest ~= nil and newest > nowUs then',
    replace: 'if false then',
  },
  {
    id: 'sliding-log/retry-search-gt',
    file: 'sliding-log.lua',
    find: 'if log_cum(v, mid) - before >= k then',
    replace: 'if log_cum(v, mid) - before > k then',
  },
  {
    id: 'sliding-log/rewrite-later',
    file: 'sliding-log.lua',
    find: 'if cum < LOG_CUM_MAX and dead < kept then',
    replace: 'if cum < LOG_CUM_MAX and dead <= kept then',
  },
  {
    id: 'sliding-log/no-append-pexpire',
    file: 'sliding-log.lua',
    find: 'if floor(stamp / sliceUs) ~= floor(r.newest / sliceUs) then',
    replace: 'if false then',
  },
  {
    id: 'sliding-log/ttl-slices',
    file: 'sliding-log.lua',
    find: 'local LOG_TTL_SLICES = 8',
    replace: 'local LOG_TTL_SLICES = 4',
  },
  {
    id: 'sliding-log/now-truncated',
    file: 'sliding-log.lua',
    find: '  local nowUs = floor(now * 1000 + 0.5)\n  local sinceUs = nowUs - windowMs * 1000\n  local v = saved',
    replace:
      '  local nowUs = floor(now * 1000)\n  local sinceUs = nowUs - windowMs * 1000\n  local v = saved',
  },
  {
    id: 'sl-settle/now-truncated',
    file: 'sliding-log.lua',
    find: '    return nil\n  end\n  local nowUs = floor(now * 1000 + 0.5)',
    replace: '    return nil\n  end\n  local nowUs = floor(now * 1000)',
  },

  // decide.lua
  {
    id: 'decide/not-all-or-nothing',
    file: 'decide.lua',
    find: 'local chargeAll = all and consume',
    replace: 'local chargeAll = consume',
  },
  {
    id: 'decide/shadow-deny-blocks-all',
    file: 'decide.lua',
    find: 'local chargeEnforced = enforced and consume and not all',
    replace: 'local chargeEnforced = false',
  },
  {
    id: 'decide/shadow-deny-charges-shadows',
    file: 'decide.lua',
    find: 'local charged = chargeAll or (chargeEnforced and not ent[2 * (e0 + i) - 1].shadow)',
    replace: 'local charged = chargeAll or chargeEnforced',
  },
  {
    id: 'decide/shadow-flag-ignored',
    file: 'decide.lua',
    find: "shadow = shadow == '1',",
    replace: 'shadow = false,',
  },
  {
    id: 'decide/shadow-deny-is-enforced',
    file: 'decide.lua',
    find: '      -- #if shadow\n      enforced = enforced and policy.shadow',
    replace: '      -- #if shadow\n      enforced = enforced and not policy.shadow',
  },
  {
    id: 'decide/ttl-no-margin',
    file: 'decide.lua',
    find: '    if charged then\n      local ttl = ceil(r.chargedResetMs) + 1',
    replace: '    if charged then\n      local ttl = ceil(r.chargedResetMs)',
  },
  {
    id: 'decide/ttl-floor',
    file: 'decide.lua',
    find: '    if charged then\n      local ttl = ceil(r.chargedResetMs) + 1',
    replace: '    if charged then\n      local ttl = floor(r.chargedResetMs)',
  },
  {
    id: 'decide/no-explicit-ttl-floor',
    file: 'decide.lua',
    find: '      local ttl = ceil(r.chargedResetMs) + 1\n      if explicit and ttl < EXPLICIT_TTL_FLOOR_MS then\n        ttl = EXPLICIT_TTL_FLOOR_MS\n      end\n      if ttl > MAX_TTL_MS then',
    replace:
      '      local ttl = ceil(r.chargedResetMs) + 1\n      if false then\n        ttl = EXPLICIT_TTL_FLOOR_MS\n      end\n      if ttl > MAX_TTL_MS then',
  },
  {
    id: 'decide/no-max-ttl',
    file: 'decide.lua',
    find: '      end\n      if ttl > MAX_TTL_MS then\n        ttl = MAX_TTL_MS\n      end\n      -- Whole ms',
    replace: '      end\n      if false then\n        ttl = MAX_TTL_MS\n      end\n      -- Whole ms',
  },
  {
    id: 'decide/replay-shadow-deny-is-enforced',
    file: 'decide.lua',
    find: '      all = false\n      enforced = enforced and policy.shadow\n    end\n    at = at + 4',
    replace: '      all = false\n      enforced = enforced and not policy.shadow\n    end\n    at = at + 4',
  },
  {
    id: 'decide/replay-ttl-no-margin',
    file: 'decide.lua',
    find: 'nowEnforced) then\n      local ttl = ceil(r.chargedResetMs) + 1',
    replace: 'nowEnforced) then\n      local ttl = ceil(r.chargedResetMs)',
  },
  {
    id: 'decide/replay-ttl-floor',
    file: 'decide.lua',
    find: 'nowEnforced) then\n      local ttl = ceil(r.chargedResetMs) + 1',
    replace: 'nowEnforced) then\n      local ttl = floor(r.chargedResetMs)',
  },
  {
    id: 'decide/replay-no-explicit-ttl-floor',
    file: 'decide.lua',
    find: 'nowEnforced) then\n      local ttl = ceil(r.chargedResetMs) + 1\n      if explicit and ttl < EXPLICIT_TTL_FLOOR_MS then',
    replace: 'nowEnforced) then\n      local ttl = ceil(r.chargedResetMs) + 1\n      if false then',
  },
  {
    id: 'decide/ban-no-explicit-ttl-floor',
    file: 'decide.lua',
    find: '      local ttl = ceil(lastMs - now) + 1\n      if explicit and ttl < EXPLICIT_TTL_FLOOR_MS then',
    replace: '      local ttl = ceil(lastMs - now) + 1\n      if false then',
  },
  {
    id: 'decide/ban-no-max-ttl',
    file: 'decide.lua',
    find: '      end\n      if ttl > MAX_TTL_MS then\n        ttl = MAX_TTL_MS\n      end\n      rcall(',
    replace: '      end\n      if false then\n        ttl = MAX_TTL_MS\n      end\n      rcall(',
  },
  {
    id: 'decide/positive-accepts-zero',
    file: 'decide.lua',
    find: 'n <= 0 or',
    replace: 'n < 0 or',
  },
  {
    id: 'decide/now-range',
    file: 'common.lua',
    find: 'not (now >= 0 and now < 1e13)',
    replace: 'not (now >= 0 and now < 1e14)',
  },
  {
    id: 'decide/log-limit-unchecked',
    file: 'decide.lua',
    find: 'if maxLimit ~= nil and limit > maxLimit then',
    replace: 'if false then',
  },
  {
    id: 'decide/log-cost-fraction',
    file: 'decide.lua',
    find: 'if policy.wholeCosts and cost ~= floor(cost) then',
    replace: 'if false then',
  },
  {
    id: 'decide/key-count-unchecked',
    file: 'decide.lua',
    find: 'if keyi - 1 ~= #KEYS then',
    replace: 'if false then',
  },
  {
    id: 'decide/replay-expiry-lt',
    file: 'decide.lua',
    find: 'if expiresAt ~= nil and now <= expiresAt then',
    replace: 'if expiresAt ~= nil and now < expiresAt then',
  },
  {
    id: 'decide/replay-any-shape',
    file: 'decide.lua',
    find: 'if #items == 1 + width then',
    replace: 'if true then',
  },
  {
    id: 'decide/replay-slots-skipped',
    file: 'decide.lua',
    find: '            replay_slots(start, e0, count, keyBase)',
    replace: '            local _ = start',
  },
  {
    id: 'decide/replay-slots-taken-when-denied',
    file: 'decide.lua',
    find: 'if (policy.shadow and nowAll) or (not policy.shadow and nowEnforced) then',
    replace: 'if true then',
  },
  {
    id: 'decide/reset-floor',
    file: 'decide.lua',
    find: 'reply[nReply + 3] = ceil(resetMs)',
    replace: 'reply[nReply + 3] = floor(resetMs)',
  },
  {
    id: 'decide/retry-floor',
    file: 'decide.lua',
    find: 'reply[nReply + 4] = ceil(r.retryAfterMs - WAIT_NOISE_MS)',
    replace: 'reply[nReply + 4] = floor(r.retryAfterMs - WAIT_NOISE_MS)',
  },
  {
    id: 'decide/replay-retry-floor',
    file: 'decide.lua',
    find: 'reply[at + 4] = ceil(r.retryAfterMs - WAIT_NOISE_MS)',
    replace: 'reply[at + 4] = floor(r.retryAfterMs - WAIT_NOISE_MS)',
  },

  // decide.lua: lease takes (cost '<want>><least>')
  {
    id: 'decide/lease-no-partial',
    file: 'decide.lua',
    find: 'if r.remaining >= least then',
    replace: 'if false then',
  },
  {
    id: 'decide/lease-partial-gt',
    file: 'decide.lua',
    find: 'if r.remaining >= least then',
    replace: 'if r.remaining > least then',
    explained: 'equivalent: when the units left equal least, the take is evaluated with least either way',
  },
  {
    id: 'decide/lease-no-least-retry',
    file: 'decide.lua',
    find: 'if not r.allowed and units > least then',
    replace: 'if false then',
    explained:
      'reached only at the rounding edge: remaining is whole(left + EPS), so a state within 1e-9 of a whole unit reports one unit more than a take of it admits; then the take falls back to least (as MemoryStore does). No test state lands within 1e-9 of a whole unit',
  },
  {
    id: 'decide/lease-charged-when-not',
    file: 'decide.lua',
    find: 'reply[nReply] = charged and takes[i] or 0',
    replace: 'reply[nReply] = takes[i]',
  },
  {
    id: 'decide/lease-full-take-only',
    file: 'decide.lua',
    find: 'local least = lease and lease[e0 + i]\n    if least then',
    replace: 'local least = lease and lease[e0 + i]\n    if false then',
  },
  // decide.lua: bans (policy.ban)
  {
    id: 'decide/ban-never-in-force',
    file: 'decide.lua',
    find: 'local banned = untilMs ~= nil and now < untilMs',
    replace: 'local banned = false',
  },
  {
    id: 'decide/ban-end-inclusive',
    file: 'decide.lua',
    find: 'local banned = untilMs ~= nil and now < untilMs',
    replace: 'local banned = untilMs ~= nil and now <= untilMs',
  },
  {
    id: 'decide/ban-admits',
    file: 'decide.lua',
    find: 'if B.read(i, KEYS[nextBan]) then\n        ok = false',
    replace: 'if B.read(i, KEYS[nextBan]) and false then\n        ok = false',
  },
  {
    id: 'decide/ban-on-peek',
    file: 'decide.lua',
    find: 'B.reply(ban, i, consume and not (r.allowed or turn), nReply)',
    replace: 'B.reply(ban, i, not (r.allowed or turn), nReply)',
  },
  {
    id: 'decide/ban-window-never-ends',
    file: 'decide.lua',
    find: 'if B.untilMs[i] and now - B.start[i] < ban.windowMs then',
    replace: 'if B.untilMs[i] then',
  },
  {
    id: 'decide/ban-escalate-late',
    file: 'decide.lua',
    find: 'if ban.violations > 0 and violations >= ban.violations then',
    replace: 'if ban.violations > 0 and violations > ban.violations then',
  },
  {
    id: 'decide/ban-ttl-block-only',
    file: 'decide.lua',
    find: 'if ban.violations > 0 and startMs + ban.windowMs > lastMs then',
    replace: 'if false then',
  },
  {
    id: 'decide/ban-retry-not-rest',
    file: 'decide.lua',
    find: 'if retry ~= -1 and retry < restMs then',
    replace: 'if false then',
  },
  {
    id: 'decide/ban-reply-unflagged',
    file: 'decide.lua',
    find: 'reply[at + 1] = 2',
    replace: 'reply[at + 1] = 0',
  },
  {
    id: 'decide/ban-keys-uncounted',
    file: 'decide.lua',
    find: 'keyi = keyi + (B.keys[d] or 0)',
    replace: 'keyi = keyi',
  },

  // settle.lua and the algorithms' SETTLES
  {
    id: 'settle/keepttl-px',
    file: 'settle.lua',
    find: "rcall('SET', key, text, 'KEEPTTL')",
    replace: "rcall('SET', key, text, 'PX', 1)",
  },
  {
    id: 'settle/refund-as-charge',
    file: 'settle.lua',
    find: 'if e.delta < 0 then',
    replace: 'if e.delta > 0 then',
  },
  {
    id: 'settle/reply-always',
    file: 'settle.lua',
    find: '      reply[i] = 1',
    replace: '      reply[i] = 1\n    else\n      reply[i] = 1',
  },
  { id: 'settle/ago-sign', file: 'settle.lua', find: 'now - e.ago,', replace: 'now + e.ago,' },
  {
    id: 'settle/answered-as-asked',
    file: 'settle.lua',
    find: 'e.reserved, now - e.answered, e.wait)',
    replace: 'e.reserved, now - e.ago, e.wait)',
  },
  {
    id: 'settle/reserved-unchecked',
    file: 'settle.lua',
    find: 'if reserved == nil or delta < -reserved then',
    replace: 'if reserved == nil then',
  },
  {
    id: 'settle/answered-unchecked',
    file: 'settle.lua',
    find: 'if answered == nil or not (answered >= 0 and answered <= ago) then',
    replace: 'if answered == nil then',
  },
  {
    id: 'settle/bucket-refund-no-refill',
    file: 'common.lua',
    find: 'most = reserved - (latest - turn) / intervalMs',
    replace: 'most = reserved',
  },
  {
    id: 'settle/bucket-refund-spent-charges',
    file: 'common.lua',
    find: '  if most <= 0 then\n    return 0',
    replace: '  if false then\n    return 0',
  },
  {
    id: 'settle/bucket-refund-uncut',
    file: 'common.lua',
    find: '  if delta > -most then\n    return delta',
    replace: '  if true then\n    return delta',
  },
  {
    id: 'settle/bucket-refund-at-zero',
    file: 'common.lua',
    find: '  if most <= 0 then\n    return 0',
    replace: '  if most < 0 then\n    return 0',
    explained: 'equivalent: at most == 0 the delta is -0 either way (-most), which the caller drops as 0',
  },
  {
    id: 'settle/bucket-refund-last-turn-from-reserved-at',
    file: 'common.lua',
    find: '  if wait > 0 and latest <= reservedBy + wait then',
    replace: '  if false then',
  },
  {
    id: 'tb-settle/refund-refill-to-now',
    file: 'token-bucket.lua',
    find: 'bucket_delta(delta, ts,',
    replace: 'bucket_delta(delta, now,',
  },
  {
    id: 'gcra-settle/refund-refill-to-now',
    file: 'gcra.lua',
    find: 'bucket_delta(delta, ts,',
    replace: 'bucket_delta(delta, now,',
  },
  {
    id: 'tb-settle/refund-of-nothing-written',
    file: 'token-bucket.lua',
    find: '  if delta == 0 then\n    return nil',
    replace: '  if false then\n    return nil',
  },
  {
    id: 'gcra-settle/refund-of-nothing-written',
    file: 'gcra.lua',
    find: '  if delta == 0 then\n    return nil',
    replace: '  if false then\n    return nil',
  },
  {
    id: 'settle/whole-check',
    file: 'settle.lua',
    find: 'if WHOLE_COSTS[name] and delta ~= floor(delta) then',
    replace: 'if false then',
  },
  {
    id: 'settle/ceiling-one-limit',
    file: 'common.lua',
    find: '  return 2 * limit\nend',
    replace: '  return 3 * limit\nend',
  },
  {
    id: 'tb-settle/no-full-noop',
    file: 'token-bucket.lua',
    find: 'if ts <= now and tokens >= limit then',
    replace: 'if false then',
  },
  {
    id: 'tb-settle/refund-uncapped',
    file: 'token-bucket.lua',
    find: '    if next > limit then\n      next = limit',
    replace: '    if false then\n      next = limit',
    explained:
      'equivalent: every reader (evaluate and settle) caps tokens at the limit, and a refund keeps the TTL',
  },
  {
    id: 'tb-settle/debt-uncapped',
    file: 'token-bucket.lua',
    find: '    if next < least then',
    replace: '    if false then',
  },
  {
    id: 'tb-settle/debt-forgiven',
    file: 'token-bucket.lua',
    find: 'tokens2, ts2 = 0, now - next * intervalMs',
    replace: 'tokens2, ts2 = 0, now',
  },
  {
    id: 'gcra-settle/no-drained-noop',
    file: 'gcra.lua',
    find: 'if ts <= now and used <= 0 then',
    replace: 'if false then',
  },
  {
    id: 'gcra-settle/refund-below-zero',
    file: 'gcra.lua',
    find: '  local next = owed + delta\n  if next < 0 then',
    replace: '  local next = owed + delta\n  if false then',
    explained:
      'equivalent: every reader (evaluate and settle) reads units owed below 0 as 0, and a refund keeps the TTL',
  },
  {
    id: 'gcra-settle/debt-forgiven',
    file: 'gcra.lua',
    find: 'used2, ts2 = limit, now + (next - limit) * intervalMs',
    replace: 'used2, ts2 = limit, now',
  },
  {
    id: 'fw-settle/any-window',
    file: 'fixed-window.lua',
    find: 'if start == nil or start ~= win or now >= win + windowMs then',
    replace: 'if start == nil then',
  },
  {
    id: 'fw-settle/below-zero',
    file: 'fixed-window.lua',
    find: '  if count2 < 0 then\n    count2 = 0',
    replace: '  if false then\n    count2 = 0',
  },
  {
    id: 'sw-settle/prev-as-cur',
    file: 'sliding-window.lua',
    find: '    prev = sliding_window_settled(prev, delta, limit)',
    replace: '    cur = sliding_window_settled(cur, delta, limit)',
  },
  {
    id: 'sw-settle/over-noop',
    file: 'sliding-window.lua',
    find: '  if keepMs <= 0 then\n    return nil',
    replace: '  if false then\n    return nil',
  },
  {
    id: 'sl-settle/refund-after-reservation',
    file: 'sliding-log.lua',
    find: 'while i >= 1 and stamps[i] > byUs do',
    replace: 'while false do',
  },
  {
    id: 'sl-settle/refund-oldest-first',
    file: 'sliding-log.lua',
    find: '    while i >= 1 and refund > 0 do',
    replace: '    i = 1\n    while i >= 1 and i <= m and refund > 0 do',
  },
  {
    id: 'sl-settle/charge-in-past',
    file: 'sliding-log.lua',
    find: 'stamps[m], units[m] = nowUs, extra',
    replace: 'stamps[m], units[m] = nowUs - 1000, extra',
  },
  {
    id: 'sl-settle/keep-empty',
    file: 'sliding-log.lua',
    find: '    if units[i] > 0 then\n      cum = cum + units[i]',
    replace: '    if units[i] >= 0 then\n      cum = cum + units[i]',
  },

  // reset.lua
  {
    id: 'reset/chunk-short',
    file: 'reset.lua',
    find: 'math.min(i + 999, #KEYS)',
    replace: 'math.min(i + 998, #KEYS)',
  },
];
