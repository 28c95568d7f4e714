/** `toHttpVerdict`: what an adapter does with a decision, framework-neutral. */
import { OPTION_DEFAULTS } from '../options/defaults.js';
import type { Decision } from '../types.js';
import { type HeaderFormat, type RateLimitHeaderOptions, rateLimitHeaders } from './headers.js';
import {
  PROBLEM_CONTENT_TYPE,
  type ProblemBody,
  quotaExceededProblem,
  unavailableProblem,
} from './problem.js';

/** The HTTP answer to a decision. */
export interface HttpVerdict {
  /** 'pass': call next(); 'deny': respond with status, headers and body. */
  readonly action: 'pass' | 'deny';
  readonly status: 200 | 429 | 503;
  /**
   * Set these in both cases (may be empty). Denies include `Cache-Control: no-store`,
   * `Content-Type` and (429) `Retry-After`.
   */
  readonly headers: Readonly<Record<string, string>>;
  /** JSON, content type application/problem+json; undefined for a pass. */
  readonly body: ProblemBody | undefined;
}

/** Options of `toHttpVerdict`. */
export interface HttpVerdictOptions {
  /** Header format, default `'draft-10'`; `false` sends no rate-limit headers. */
  readonly headers?: HeaderFormat;
  /** Show shadow policies in the headers (default false). */
  readonly shadowHeaders?: boolean;
  /** Now in epoch milliseconds, for the legacy reset timestamp. */
  readonly nowMs?: number;
}

/**
 * Maps a decision to an HTTP verdict:
 * - allowed (including shadow would-denies and `open` failures): pass, status 200, the
 *   rate-limit headers of the enforced policies (shadow policies only with `shadowHeaders`);
 * - over limit: deny with 429, rate-limit headers, `Retry-After` (whole seconds, the longest
 *   wait among denying policies, at least 1), `Content-Type: application/problem+json`,
 *   `Cache-Control: no-store` and a quota-exceeded problem body;
 * - unavailable under `closed`: deny with 503, `Content-Type`, `Cache-Control: no-store` and an
 *   unavailable problem body.
 */
export function toHttpVerdict(decision: Decision, options: HttpVerdictOptions = {}): HttpVerdict {
  const headerOptions =
    options.nowMs === undefined
      ? options.shadowHeaders === true
        ? WITH_SHADOW
        : WITHOUT_SHADOW
      : { shadowHeaders: options.shadowHeaders ?? false, nowMs: options.nowMs };
  // A fresh record every call: adding the deny headers to it changes nobody else's.
  const headers = rateLimitHeaders(decision, options.headers ?? OPTION_DEFAULTS.headers, headerOptions);
  if (decision.allowed) return { action: 'pass', status: 200, headers, body: undefined };
  // A refusal answers this moment only: no cache may keep it (RFC 6585 for 429).
  if (decision.outcome === 'unavailable') {
    headers['Content-Type'] = PROBLEM_CONTENT_TYPE;
    headers['Cache-Control'] = NO_STORE;
    return { action: 'deny', status: 503, headers, body: unavailableProblem(decision) };
  }
  const body = quotaExceededProblem(decision);
  headers['Retry-After'] = String(body.retry_after_seconds);
  headers['Content-Type'] = PROBLEM_CONTENT_TYPE;
  headers['Cache-Control'] = NO_STORE;
  return { action: 'deny', status: 429, headers, body };
}

/** `Cache-Control` of every 429 and 503 answer. */
const NO_STORE = 'no-store';

const WITH_SHADOW: RateLimitHeaderOptions = { shadowHeaders: true };
const WITHOUT_SHADOW: RateLimitHeaderOptions = { shadowHeaders: false };
