/** `toHttpVerdict`: the whole HTTP answer to a decision, framework-neutral, ready to apply. */
import { holdsSlots } from '../algorithms/concurrency.js';
import type { HeaderFormat } from '../options/defaults.js';
import { OPTION_DEFAULTS } from '../options/defaults.js';
import type { Decision } from '../types.js';
import { type RateLimitHeaderOptions, rateLimitHeaders } from './headers.js';
import {
  forbiddenProblem,
  freshProblemJson,
  PROBLEM_CONTENT_TYPE,
  type ProblemBody,
  problemJson,
  quotaExceededProblem,
  unavailableProblem,
} from './problem.js';
import { denyingResults } from './retry-after.js';

/**
 * The HTTP answer to a decision: everything an adapter writes, computed here. An adapter
 * applies it in a few lines:
 * - `pass`: set `headers`, then run the handler;
 * - `deny` with the default response: status `status`, every header in `headers`
 *   (`Content-Type` included), body `bodyText`;
 * - `deny` with an app's own response (`onLimited`): set `onLimitedHeaders` (the same headers
 *   without `Content-Type`, which belongs to the default body) and hand the app the verdict.
 */
export interface HttpVerdict {
  /** 'pass': call next(); 'deny': respond with status, headers and body. */
  readonly action: 'pass' | 'deny';
  readonly status: 200 | 403 | 429 | 503;
  /**
   * Set these in both cases (may be empty). Denies include `Cache-Control: no-store`,
   * `Content-Type` and (429) `Retry-After`.
   */
  readonly headers: Readonly<Record<string, string>>;
  /**
   * `headers` without `Content-Type`, in the same order: what to set when the app answers a
   * denial with a body of its own (`onLimited`). For a pass, `headers` itself.
   */
  readonly onLimitedHeaders: Readonly<Record<string, string>>;
  /** `application/problem+json` for a deny, undefined for a pass. */
  readonly contentType: string | undefined;
  /** The problem details object (RFC 9457); undefined for a pass. */
  readonly body: ProblemBody | undefined;
  /** `body` serialized, exactly the bytes of the default response; undefined for a pass. */
  readonly bodyText: string | undefined;
}

/** Options of `toHttpVerdict`. */
export interface HttpVerdictOptions {
  /** Header format, default `'draft-10'`; `false` sends no rate-limit headers. */
  readonly headers?: HeaderFormat;
  /** Show shadow policies in the headers (default false). */
  readonly shadowHeaders?: boolean;
  /** Now in epoch milliseconds, for the legacy reset timestamp. */
  readonly nowMs?: number;
  /** Status of a request a concurrency policy alone turned away: 429 (default) or 503. */
  readonly concurrencyStatus?: 429 | 503;
}

/**
 * Maps a decision to an HTTP verdict:
 * - allowed (including shadow would-denies and `open` failures): pass, status 200, the
 *   rate-limit headers of the enforced policies (shadow policies only with `shadowHeaders`);
 * - over limit: deny with 429, rate-limit headers, `Retry-After` (whole seconds, the longest
 *   wait among denying policies, at least 1), `Content-Type: application/problem+json`,
 *   `Cache-Control: no-store` and a quota-exceeded problem body;
 * - unavailable under `closed`: deny with 503, `Content-Type`, `Cache-Control: no-store` and an
 *   unavailable problem body;
 * - forbidden (the deny list): deny with 403, `Content-Type`, `Cache-Control: no-store` and a
 *   forbidden problem body, no rate-limit headers (no policy was asked).
 * Every call returns fresh header records and a fresh body: changing one changes nobody else's.
 */
export function toHttpVerdict(decision: Decision, options: HttpVerdictOptions = {}): HttpVerdict {
  const headerOptions =
    options.nowMs === undefined
      ? options.shadowHeaders === true
        ? WITH_SHADOW
        : WITHOUT_SHADOW
      : { shadowHeaders: options.shadowHeaders ?? false, nowMs: options.nowMs };
  const headers = rateLimitHeaders(decision, options.headers ?? OPTION_DEFAULTS.headers, headerOptions);
  if (decision.allowed) {
    return {
      action: 'pass',
      status: 200,
      headers,
      onLimitedHeaders: headers,
      contentType: undefined,
      body: undefined,
      bodyText: undefined,
    };
  }
  if (decision.outcome === 'unavailable') return denial(503, headers, unavailableProblem(decision));
  if (decision.outcome === 'forbidden') return denial(403, headers, forbiddenProblem());
  const body = quotaExceededProblem(decision);
  headers['Retry-After'] = String(body.retry_after_seconds);
  if (options.concurrencyStatus === 503 && overloaded(decision)) {
    // Overload, not the client's quota: 503 with the same wait and policies.
    const overload: ProblemBody = { ...body, status: 503, error: 'too many requests in flight' };
    return denial(503, headers, overload, problemJson(overload));
  }
  return denial(429, headers, body);
}

/** Denied by concurrency policies alone: every enforced policy that denied takes a slot. */
function overloaded(decision: Decision): boolean {
  const denying = denyingResults(decision);
  return denying.length > 0 && denying.every(holdsSlots);
}

/** A deny verdict from the rate-limit headers (and `Retry-After`) and the problem body. */
function denial(
  status: 403 | 429 | 503,
  headers: Record<string, string>,
  body: ProblemBody,
  bodyText: string = freshProblemJson(body),
): HttpVerdict {
  headers['Content-Type'] = PROBLEM_CONTENT_TYPE;
  // A refusal answers this moment only: no cache may keep it (RFC 6585 for 429).
  headers['Cache-Control'] = NO_STORE;
  // Copied name by name: an object spread of these records costs several times as much.
  const onLimitedHeaders: Record<string, string> = {};
  for (const name in headers) if (name !== 'Content-Type') onLimitedHeaders[name] = headers[name]!;
  return {
    action: 'deny',
    status,
    headers,
    onLimitedHeaders,
    contentType: PROBLEM_CONTENT_TYPE,
    body,
    bodyText,
  };
}

/** `Cache-Control` of every 403, 429 and 503 answer. */
const NO_STORE = 'no-store';

const WITH_SHADOW: RateLimitHeaderOptions = { shadowHeaders: true };
const WITHOUT_SHADOW: RateLimitHeaderOptions = { shadowHeaders: false };
