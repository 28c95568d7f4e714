/**
 * Problem details bodies (RFC 9457) for denied (429), unavailable (503) and deny-listed (403) requests. They
 * carry policy names and a wait time, never the identity, a storage key or anything internal.
 */
import type { Decision } from '../types.js';
import { denyingResults, longestDenial, policyOf, waitSeconds } from './retry-after.js';

/** The media type of every body here. */
export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** The problem type the RateLimit header draft (draft-10, section 5.1) defines for exceeded quotas. */
export const QUOTA_EXCEEDED_TYPE = 'https://iana.org/assignments/http-problem-types#quota-exceeded';

/** Its registered title (draft-10, section 10.2.1). */
export const QUOTA_EXCEEDED_TITLE = 'Quota Exceeded';

/** A problem details object as Sluice sends it. */
export interface ProblemBody {
  /** A URI naming the problem type; `about:blank` when the status code says it all. */
  type: string;
  title: string;
  status: number;
  /** Names of the policies whose quota was exceeded (429 only). */
  'violated-policies'?: string[];
  /** `rate limit exceeded`, `rate limiter unavailable` or `forbidden`. */
  error: string;
  /** 429: the denying policy with the longest wait. */
  policy?: string;
  /** 429: the same integer as the `Retry-After` header. */
  retry_after_seconds?: number;
}

/**
 * The 429 body for an over-limit decision:
 * `{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Quota Exceeded",
 * "status":429,"violated-policies":["transfers"],"error":"rate limit exceeded","policy":"transfers",
 * "retry_after_seconds":20}`.
 */
export function quotaExceededProblem(decision: Decision): ProblemBody {
  const denial = longestDenial(decision);
  const violated = denyingResults(decision).map((r) => r.policy);
  const policy = policyOf(decision, denial);
  if (violated.length === 0 && policy !== undefined) violated.push(policy);
  const body: ProblemBody = {
    type: QUOTA_EXCEEDED_TYPE,
    title: QUOTA_EXCEEDED_TITLE,
    status: 429,
    'violated-policies': violated,
    error: 'rate limit exceeded',
  };
  if (policy !== undefined) body.policy = policy;
  body.retry_after_seconds = waitSeconds(denial?.waitMs ?? decision.retryAfterMs);
  return body;
}

/**
 * A problem body as sent: `JSON.stringify(body)`. `toHttpVerdict` puts it in the verdict
 * (`bodyText`); adapters that send a verdict's body themselves read that instead.
 */
export function problemJson(body: ProblemBody): string {
  return JSON.stringify(body);
}

/** The 503 body, serialized once. */
const UNAVAILABLE_JSON = JSON.stringify(unavailableProblem());

/**
 * The 403 body for a deny-listed request:
 * `{"type":"about:blank","title":"Forbidden","status":403,"error":"forbidden"}`. It says nothing
 * of which entry matched, nor the identity.
 */
export function forbiddenProblem(): ProblemBody {
  return { type: 'about:blank', title: 'Forbidden', status: 403, error: 'forbidden' };
}

/** The 403 body, serialized once. */
const FORBIDDEN_JSON = JSON.stringify(forbiddenProblem());

/** Serialized 429 bodies by their variable fields (seconds and policy name only); cleared when full. */
const MAX_CACHED_BODIES = 1024;
const bodyJson = new Map<string, string>();

/**
 * `JSON.stringify(body)` for a body `quotaExceededProblem` or `unavailableProblem` has just
 * made, as `toHttpVerdict` does, from a small cache: such a body varies only by its policy
 * names and seconds, so a few strings serve every request (about 7% of a denied Hono
 * request, counted with bench/instructions.mjs). Nothing else is checked: any other body
 * goes through `problemJson`.
 */
export function freshProblemJson(body: ProblemBody): string {
  if (body.status === 503) return UNAVAILABLE_JSON;
  if (body.status === 403) return FORBIDDEN_JSON;
  const violated = body['violated-policies'];
  const policy = body.policy;
  // Cached: the common case of one violated policy, which is the policy named.
  if (policy === undefined || violated?.length !== 1 || violated[0] !== policy) return JSON.stringify(body);
  const key = `${body.retry_after_seconds} ${policy}`;
  let json = bodyJson.get(key);
  if (json === undefined) {
    json = JSON.stringify(body);
    if (bodyJson.size >= MAX_CACHED_BODIES) bodyJson.clear();
    bodyJson.set(key, json);
  }
  return json;
}

/**
 * The 503 body for a decision the limiter could not make under `failMode: 'closed'`:
 * `{"type":"about:blank","title":"Service Unavailable","status":503,"error":"rate limiter unavailable"}`.
 * No policy is named: which policy could not be decided is an operator's concern (metrics
 * report it as `fail_closed`), not the client's.
 */
export function unavailableProblem(_decision?: Decision): ProblemBody {
  return {
    type: 'about:blank',
    title: 'Service Unavailable',
    status: 503,
    error: 'rate limiter unavailable',
  };
}
