/**
 * Problem details bodies (RFC 9457) for denied (429) and unavailable (503) requests. They
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
  /** `rate limit exceeded` or `rate limiter unavailable`. */
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

/** The 503 body, serialized once. */
const UNAVAILABLE_JSON = JSON.stringify(unavailableProblem());

/** Serialized 429 bodies by their variable fields (policy names and seconds only); cleared when full. */
const MAX_CACHED_BODIES = 1024;
const bodyJson = new Map<string, string>();

/**
 * `JSON.stringify(body)` for a body made by `quotaExceededProblem` or `unavailableProblem`
 * (as `toHttpVerdict` puts it in a verdict), from a cache: these bodies vary only by policy
 * names and a number of seconds, so the same few strings serve every request. Any other
 * object (a changed or extended body) is serialized as it is.
 */
export function problemJson(body: ProblemBody): string {
  let keys = 0;
  for (const _ in body) keys++;
  if (body.type === 'about:blank') {
    if (
      keys === 4 &&
      body.status === 503 &&
      body.title === 'Service Unavailable' &&
      body.error === 'rate limiter unavailable'
    ) {
      return UNAVAILABLE_JSON;
    }
    return JSON.stringify(body);
  }
  const violated = body['violated-policies'];
  const policy = body.policy;
  const seconds = body.retry_after_seconds;
  if (
    body.type !== QUOTA_EXCEEDED_TYPE ||
    body.title !== QUOTA_EXCEEDED_TITLE ||
    body.status !== 429 ||
    body.error !== 'rate limit exceeded' ||
    !Array.isArray(violated) ||
    violated.length !== 1 ||
    typeof policy !== 'string' ||
    violated[0] !== policy ||
    typeof seconds !== 'number' ||
    keys !== 7
  ) {
    return JSON.stringify(body);
  }
  // Cached: the common case of one violated policy, which is the policy named.
  const key = `${seconds} ${policy}`;
  let json = bodyJson.get(key);
  if (json === undefined) {
    // Built in the canonical field order, whatever the order of the object given.
    const canonical: ProblemBody = {
      type: QUOTA_EXCEEDED_TYPE,
      title: QUOTA_EXCEEDED_TITLE,
      status: 429,
      'violated-policies': [policy],
      error: 'rate limit exceeded',
      policy,
      retry_after_seconds: seconds,
    };
    json = JSON.stringify(canonical);
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
