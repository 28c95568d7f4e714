/**
 * Turns the verdicts of one request into Envoy's RateLimitResponse: a status per descriptor, the
 * overall code, the reference's counters, response headers and a problem+json `raw_body`.
 */
import type { Decision, PolicyResult, StoreVerdict } from '@sluice/core';
import { problemJson, quotaExceededProblem, rateLimitHeaders } from '@sluice/core/adapter';
import { type Rule, UNIT_MS } from './config/types.js';
import type { CounterVerdict } from './decide.js';
import { overZeroLimit, type PlannedDescriptor } from './plan.js';
import type { RlsCode, RlsDescriptorStatus, RlsDuration, RlsHeader, RlsResponse } from './rls-types.js';
import type { ResponseHeaders, ServerSettings } from './settings.js';
import type { ServiceStats } from './stats.js';

const MAX_UINT32 = 4_294_967_295;
const ENCODER = new TextEncoder();
const EMPTY = new Uint8Array(0);

/** A limited descriptor's verdict, as the response and the headers need it. */
interface Limited {
  readonly rule: Rule;
  readonly verdict: StoreVerdict;
  readonly hits: number;
  /** Milliseconds reported as `duration_until_reset` (see durationMsOf). */
  readonly durationMs: number;
}

function duration(ms: number): RlsDuration {
  const whole = Math.max(0, Math.ceil(ms));
  return { seconds: String(Math.floor(whole / 1000)), nanos: (whole % 1000) * 1_000_000 };
}

/** Milliseconds to the end of the current window of `rule`'s unit, the reference's reset. */
function windowLeftMs(rule: Rule, nowMs: number): number {
  const unitMs = rule.unit === undefined ? 1000 : UNIT_MS[rule.unit];
  return unitMs - (nowMs % unitMs);
}

/**
 * The verdict of a `requests_per_unit: 0` rule (no counter): hits are over the limit, a look is
 * within it with nothing left.
 */
function zeroLimitVerdict(d: PlannedDescriptor): StoreVerdict {
  return overZeroLimit(d)
    ? { allowed: false, remaining: 0, resetMs: 0, retryAfterMs: 0 }
    : { allowed: true, remaining: 0, resetMs: 0, retryAfterMs: 0 };
}

/**
 * `duration_until_reset` in ms: for a fixed window (the reference's only kind, and a
 * `requests_per_unit: 0` rule) the end of the current window, whatever the verdict; for Sluice's
 * other algorithms the wait until the hits fit when over the limit, else the time to a full quota.
 */
function durationMsOf(rule: Rule, verdict: StoreVerdict, nowMs: number): number {
  if (rule.policy === undefined || rule.policy.algorithm === 'fixed-window') return windowLeftMs(rule, nowMs);
  if (verdict.allowed || verdict.retryAfterMs < 0) return verdict.resetMs;
  return verdict.retryAfterMs;
}

/** Counts one limited descriptor as the reference does (base_limiter.go), in whole hits. */
function countHits(stats: ServiceStats, ratio: number, item: Limited, overLimit: boolean): void {
  const { rule, verdict, hits } = item;
  stats.addRule(rule, 'total_hits', hits);
  if (overLimit) {
    stats.addRule(rule, 'over_limit', hits);
    if (rule.shadow) stats.addRule(rule, 'shadow_mode', hits);
    return;
  }
  stats.addRule(rule, 'within_limit', hits);
  const limit = rule.requestsPerUnit;
  const near = Math.floor(limit * ratio);
  const after = limit - verdict.remaining;
  const before = after - hits;
  if (after > near) stats.addRule(rule, 'near_limit', before >= near ? hits : after - near);
}

function status(item: Limited | undefined, unlimited: boolean): RlsDescriptorStatus {
  if (unlimited)
    return { code: 'OK', current_limit: null, limit_remaining: MAX_UINT32, duration_until_reset: null };
  if (item === undefined)
    return { code: 'OK', current_limit: null, limit_remaining: 0, duration_until_reset: null };
  const { rule, verdict } = item;
  const over = !verdict.allowed && !rule.shadow;
  return {
    code: over ? 'OVER_LIMIT' : 'OK',
    current_limit: { name: rule.name, requests_per_unit: rule.requestsPerUnit, unit: rule.unit ?? 'UNKNOWN' },
    // Over the limit, nothing is left (the reference reports 0), shadow rules included.
    limit_remaining: verdict.allowed ? Math.max(0, Math.min(MAX_UINT32, verdict.remaining)) : 0,
    duration_until_reset: duration(item.durationMs),
  };
}

/** A core `Decision` of the limited descriptors, so core writes the draft-10 headers and the problem body. */
function toDecision(items: readonly Limited[], overLimit: boolean): Decision {
  const results: PolicyResult[] = items.map(({ rule, verdict, hits, durationMs }) => ({
    policy: rule.name || rule.id,
    algorithm: rule.policy?.algorithm ?? 'fixed-window',
    allowed: verdict.allowed,
    outcome: verdict.allowed || rule.shadow ? 'allowed' : 'over_limit',
    limit: rule.requestsPerUnit,
    windowMs: rule.policy?.windowMs ?? 1000,
    remaining: verdict.remaining,
    resetMs: verdict.allowed ? verdict.resetMs : durationMs,
    retryAfterMs: verdict.allowed ? 0 : durationMs,
    cost: hits,
    shadow: rule.shadow,
    failMode: rule.failMode,
  }));
  const first = results[0];
  return {
    allowed: !overLimit,
    outcome: overLimit ? 'over_limit' : 'allowed',
    policy: first?.policy,
    limit: first?.limit ?? 0,
    remaining: first?.remaining ?? 0,
    resetMs: first?.resetMs ?? 0,
    retryAfterMs: first?.retryAfterMs ?? 0,
    shadowed: false,
    source: 'store',
    results,
  };
}

/**
 * The reference's three headers, from the descriptor its loop picks: the first with the fewest units
 * left, and once one is OVER_LIMIT the last OVER_LIMIT one.
 */
function referenceHeaders(
  items: readonly (Limited | undefined)[],
  statuses: readonly RlsDescriptorStatus[],
  names: ServerSettings['headerNames'],
): RlsHeader[] {
  let chosen: number | undefined;
  let fewest = MAX_UINT32;
  statuses.forEach((s, i) => {
    if (s.current_limit === null) return;
    if (s.limit_remaining < fewest) {
      chosen = i;
      fewest = s.limit_remaining;
    }
    if (s.code === 'OVER_LIMIT') {
      chosen = i;
      fewest = 0;
    }
  });
  if (chosen === undefined) return [];
  const s = statuses[chosen] as RlsDescriptorStatus;
  if (s.current_limit === null) return [];
  const resetSeconds = Math.ceil((items[chosen]?.durationMs ?? 0) / 1000);
  return [
    { key: names.limit, value: String(s.current_limit.requests_per_unit) },
    { key: names.remaining, value: String(s.limit_remaining) },
    { key: names.reset, value: String(resetSeconds) },
  ];
}

function headersOf(
  format: ResponseHeaders,
  limited: readonly Limited[],
  items: readonly (Limited | undefined)[],
  statuses: readonly RlsDescriptorStatus[],
  overLimit: boolean,
  names: ServerSettings['headerNames'],
): RlsHeader[] {
  if (format === 'off' || limited.length === 0) return [];
  if (format === 'reference') return referenceHeaders(items, statuses, names);
  const decision = toDecision(limited, overLimit);
  return Object.entries(rateLimitHeaders(decision, 'draft-10')).map(([key, value]) => ({ key, value }));
}

/**
 * The response for `planned` and its verdicts (`counters[i]` for descriptor i when it has one).
 * Global shadow mode answers OK whatever the verdicts, keeping the per-descriptor statuses.
 */
export function buildResponse(
  settings: ServerSettings,
  stats: ServiceStats,
  planned: readonly PlannedDescriptor[],
  counters: readonly (CounterVerdict | undefined)[],
  nowMs: number,
): RlsResponse {
  const limited: Limited[] = [];
  const perDescriptor = planned.map((d, i) => {
    if (d.rule === undefined) return undefined;
    const verdict = counters[i]?.verdict ?? zeroLimitVerdict(d);
    const item: Limited = {
      rule: d.rule,
      verdict,
      hits: d.hits,
      durationMs: durationMsOf(d.rule, verdict, nowMs),
    };
    limited.push(item);
    countHits(stats, settings.nearLimitRatio, item, !verdict.allowed);
    return item;
  });
  const statuses = planned.map((d, i) => status(perDescriptor[i], d.unlimited));
  let overall: RlsCode = statuses.some((s) => s.code === 'OVER_LIMIT') ? 'OVER_LIMIT' : 'OK';
  const overLimit = overall === 'OVER_LIMIT';
  const headers = headersOf(
    settings.responseHeaders,
    limited,
    perDescriptor,
    statuses,
    overLimit,
    settings.headerNames,
  );
  // The problem body (and the Decision it is written from) only for an answer over the limit.
  const body = overLimit
    ? ENCODER.encode(problemJson(quotaExceededProblem(toDecision(limited, true))))
    : EMPTY;
  if (overall === 'OVER_LIMIT' && settings.shadowMode) {
    overall = 'OK';
    stats.addService('global_shadow_mode');
  }
  return {
    overall_code: overall,
    statuses,
    response_headers_to_add: headers,
    request_headers_to_add: [],
    raw_body: overall === 'OVER_LIMIT' ? body : EMPTY,
  };
}
