/**
 * Rate-limit response headers, versioned. The default is the IETF httpapi RateLimit header
 * draft-10 (`RateLimit-Policy` and `RateLimit` as Structured Field Lists, one member per
 * policy, named by the policy); the older draft-7 and draft-6 forms and the de facto
 * `X-RateLimit-*` headers are there for clients that expect them.
 */

import { holdsSlots } from '../algorithms/concurrency.js';
import { ALGORITHMS } from '../algorithms/registry.js';
import { type HeaderFormat, OPTION_DEFAULTS } from '../options/defaults.js';
import type { Algorithm, Decision, PolicyResult } from '../types.js';
import { SF_INTEGER_MAX, serializeSfList, serializeSfString } from './structured-fields.js';

/** Options of `rateLimitHeaders`. */
export interface RateLimitHeaderOptions {
  /** Include shadow policies (default false: a shadow policy is never visible to clients). */
  readonly shadowHeaders?: boolean;
  /** Now, in epoch milliseconds, for the legacy `X-RateLimit-Reset` timestamp. Default `Date.now()`. */
  readonly nowMs?: number;
}

/** Whole seconds, rounded up, never negative. */
function ceilSeconds(ms: number): number {
  if (!Number.isFinite(ms) || ms <= 0) return 0;
  return Math.ceil(ms / 1000);
}

/** Whole units, never negative. */
function wholeUnits(n: number): number {
  if (!Number.isFinite(n) || n <= 0) return 0;
  return Math.floor(n);
}

/** The `w` value: the window in whole seconds, rounded up, at least 1. */
export function windowSeconds(windowMs: number): number {
  return Math.max(1, ceilSeconds(windowMs));
}

/** What a header describes about one policy. `windowMs` is undefined when unknown. */
interface HeaderPolicy {
  readonly policy: string;
  /** Undefined when unknown (a decision without per-policy results). */
  readonly algorithm?: Algorithm;
  readonly allowed: boolean;
  readonly limit: number;
  readonly windowMs: number | undefined;
  readonly remaining: number;
  readonly resetMs: number;
  readonly retryAfterMs: number;
}

/**
 * The policies a client may see, in the limiter's order: every applied policy that reached
 * a verdict (not `unavailable`), without shadow policies unless `shadowHeaders`.
 */
export function visibleResults(decision: Decision, shadowHeaders = false): PolicyResult[] {
  return decision.results.filter((r) => r.outcome !== 'unavailable' && (shadowHeaders || !r.shadow));
}

function headerPolicies(decision: Decision, shadowHeaders: boolean): HeaderPolicy[] {
  if (decision.results.length > 0) return visibleResults(decision, shadowHeaders);
  // No per-policy results (a decision built without them): describe the deciding policy.
  if (decision.policy === undefined || decision.outcome === 'unavailable') return [];
  if (decision.shadowed && !shadowHeaders) return [];
  return [
    {
      policy: decision.policy,
      allowed: decision.outcome !== 'over_limit',
      limit: decision.limit,
      windowMs: undefined,
      remaining: decision.remaining,
      resetMs: decision.resetMs,
      retryAfterMs: decision.retryAfterMs,
    },
  ];
}

/**
 * A policy's constant draft-10 strings: its name as an sf-string and its `RateLimit-Policy`
 * member. They depend only on the policy (name, limit, window), so they are computed once per
 * policy, not per request; the cache holds policy-level values only.
 */
interface PolicyStrings {
  readonly limit: number;
  readonly windowMs: number | undefined;
  /** `"burst"` */
  readonly name: string;
  /** `"burst";q=20;w=20` */
  readonly member: string;
}

/**
 * The quota unit of a concurrency policy (draft-10's `qu` parameter): its quota counts requests in
 * flight, and it has no window (`w` is left out).
 */
const CONCURRENT_QUOTA_UNIT = ';qu="concurrent-requests"';

/** Policies whose strings are cached; a process has few (cleared when full). */
const MAX_CACHED_POLICIES = 256;
const policyStrings = new Map<string, PolicyStrings>();

function stringsOf(r: Draft10Policy): PolicyStrings {
  const cached = policyStrings.get(r.policy);
  if (cached !== undefined && cached.limit === r.limit && cached.windowMs === r.windowMs) return cached;
  const concurrent = holdsSlots(r);
  const entry: PolicyStrings = {
    limit: r.limit,
    windowMs: r.windowMs,
    name: serializeSfString(r.policy),
    member:
      serializeSfList([
        {
          value: r.policy,
          params:
            r.windowMs === undefined || concurrent
              ? [['q', wholeUnits(r.limit)]]
              : [
                  ['q', wholeUnits(r.limit)],
                  ['w', windowSeconds(r.windowMs)],
                ],
        },
      ]) + (concurrent ? CONCURRENT_QUOTA_UNIT : ''),
  };
  if (policyStrings.size >= MAX_CACHED_POLICIES) policyStrings.clear();
  policyStrings.set(r.policy, entry);
  return entry;
}

/** A whole, non-negative number of units or seconds as a canonical sf-integer. */
function sfCount(n: number): number {
  return Math.min(n, SF_INTEGER_MAX);
}

/** What a draft-10 member says of a policy: a result, or the deciding policy of a decision without results. */
type Draft10Policy = Pick<
  HeaderPolicy,
  'policy' | 'algorithm' | 'limit' | 'windowMs' | 'remaining' | 'resetMs'
> &
  Partial<Pick<PolicyResult, 'outcome' | 'shadow'>>;

/**
 * draft-10 headers, one List member per visible policy, built from per-policy strings computed
 * once per policy (about 8% of a denied Hono request, counted with bench/instructions.mjs,
 * against serializing every member with `serializeSfList`, which gives the same text).
 */
function draft10Headers(results: readonly Draft10Policy[], shadowHeaders: boolean): Record<string, string> {
  let policy = '';
  let rate = '';
  for (let i = 0; i < results.length; i++) {
    const r = results[i]!;
    if (r.outcome === 'unavailable' || (r.shadow && !shadowHeaders)) continue;
    const strings = stringsOf(r);
    const member = `${strings.name};r=${sfCount(wholeUnits(r.remaining))};t=${sfCount(ceilSeconds(r.resetMs))}`;
    if (rate === '') {
      policy = strings.member;
      rate = member;
    } else {
      policy += `, ${strings.member}`;
      rate += `, ${member}`;
    }
  }
  if (rate === '') return {};
  return { 'RateLimit-Policy': policy, RateLimit: rate };
}

/**
 * The one policy the single-policy formats (draft-7, draft-6, legacy) describe: among
 * denying policies the one with the longest wait, otherwise the one with the fewest units
 * remaining (the first on a tie).
 */
function decidingPolicy(policies: readonly HeaderPolicy[]): HeaderPolicy | undefined {
  let best: HeaderPolicy | undefined;
  for (const p of policies) {
    if (best === undefined) best = p;
    else if (!p.allowed && (best.allowed || p.retryAfterMs > best.retryAfterMs)) best = p;
    else if (p.allowed && best.allowed && p.remaining < best.remaining) best = p;
  }
  return best;
}

/**
 * `X-RateLimit-Reset`: epoch seconds of the reset, rounded up. A fixed window (an algorithm
 * whose `windows.resetsOnBoundary`) resets on a window boundary (windows are multiples of `windowMs` since the epoch), so the boundary
 * nearest to `nowMs + resetMs` is taken: every response of one window then says the same
 * second, although `nowMs` is read a little after the decision, or on a clock a little off
 * the store's (Redis `TIME`). Other algorithms reset continuously: rounded up as they are.
 */
function legacyResetSeconds(p: HeaderPolicy, nowMs: number): number {
  const atMs = nowMs + Math.max(0, p.resetMs);
  const onBoundary = p.algorithm !== undefined && ALGORITHMS[p.algorithm].windows.resetsOnBoundary;
  if (onBoundary && p.resetMs > 0 && p.windowMs !== undefined && p.windowMs > 0) {
    return Math.ceil((Math.round(atMs / p.windowMs) * p.windowMs) / 1000);
  }
  return Math.ceil(atMs / 1000);
}

/**
 * The rate-limit headers for a decision, as a plain record (empty for `false`, or when no
 * visible policy applied). Values, all integers:
 * - `q` / limit: the policy's quota (bucket capacity for token bucket and GCRA; requests in flight
 *   at once for a concurrency policy, which draft-10 marks `qu="concurrent-requests"`);
 * - `w`: its window (or time to refill from empty) in seconds, rounded up, at least 1 (none for a
 *   concurrency policy);
 * - `r` / remaining: whole units left;
 * - `t` / reset: seconds until the quota is fully restored (`resetMs`), rounded up; exact
 *   for each algorithm, not the end of a nominal window. On a denied response `Retry-After`
 *   (when the denied cost fits again) can be shorter than `t` for token bucket and GCRA;
 *   the draft has clients give `Retry-After` precedence.
 *
 * Formats:
 * - `'draft-10'`: `RateLimit-Policy: "burst";q=20;w=20` and `RateLimit: "burst";r=19;t=1`,
 *   one List member per visible policy (canonical RFC 9651 serialization, `, ` between members).
 * - `'draft-7'`: `RateLimit-Policy: 20;w=20` and `RateLimit: limit=20, remaining=19, reset=1`.
 * - `'draft-6'`: `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset` (delta seconds)
 *   and `RateLimit-Policy: 20;w=20`.
 * - `'legacy'`: `X-RateLimit-Limit`, `X-RateLimit-Remaining` and `X-RateLimit-Reset` as
 *   epoch seconds (rounded up), the convention of GitHub and express-rate-limit.
 * The single-policy formats describe the denying policy with the longest wait, or else the
 * policy with the fewest units remaining. Shadow policies are left out unless
 * `shadowHeaders`; policies the store could not decide (`unavailable`) are left out.
 */
export function rateLimitHeaders(
  decision: Decision,
  format: HeaderFormat = OPTION_DEFAULTS.headers,
  options: RateLimitHeaderOptions = {},
): Record<string, string> {
  if (format === false) return {};
  const policies = headerPolicies(decision, options.shadowHeaders ?? false);
  if (policies.length === 0) return {};

  if (format === 'draft-10') {
    const shadowHeaders = options.shadowHeaders ?? false;
    return draft10Headers(decision.results.length > 0 ? decision.results : policies, shadowHeaders);
  }

  const p = decidingPolicy(policies)!;
  const limit = wholeUnits(p.limit);
  const remaining = wholeUnits(p.remaining);
  const resetSeconds = ceilSeconds(p.resetMs);
  const windowless = p.windowMs === undefined || holdsSlots(p);
  const policy = windowless ? `${limit}` : `${limit};w=${windowSeconds(p.windowMs!)}`;
  switch (format) {
    case 'draft-7':
      return {
        'RateLimit-Policy': policy,
        RateLimit: `limit=${limit}, remaining=${remaining}, reset=${resetSeconds}`,
      };
    case 'draft-6':
      return {
        'RateLimit-Policy': policy,
        'RateLimit-Limit': String(limit),
        'RateLimit-Remaining': String(remaining),
        'RateLimit-Reset': String(resetSeconds),
      };
    case 'legacy': {
      const nowMs = options.nowMs ?? Date.now();
      return {
        'X-RateLimit-Limit': String(limit),
        'X-RateLimit-Remaining': String(remaining),
        'X-RateLimit-Reset': String(legacyResetSeconds(p, nowMs)),
      };
    }
    default:
      throw new TypeError(`unknown header format ${JSON.stringify(format)}`);
  }
}
