/**
 * The HTTP answers design.md specifies ("HTTP behaviour"), written out literally so the
 * suites pin them: a change in core's bodies fails these tests.
 */

/** The problem type the IETF RateLimit header draft defines for a quota that is used up. */
const QUOTA_EXCEEDED = 'https://iana.org/assignments/http-problem-types#quota-exceeded';

export const EXPECTED = {
  /** The 429 problem+json body. */
  tooManyRequests(violated: string[], policy: string, retryAfterSeconds: number) {
    return {
      type: QUOTA_EXCEEDED,
      title: 'Quota Exceeded',
      status: 429,
      'violated-policies': violated,
      error: 'rate limit exceeded',
      policy,
      retry_after_seconds: retryAfterSeconds,
    };
  },
  /** The 503 problem+json body under fail mode `closed`. */
  unavailable() {
    return {
      type: 'about:blank',
      title: 'Service Unavailable',
      status: 503,
      error: 'rate limiter unavailable',
    };
  },
  /** Slack over the store deadline for one request's round trip (process scheduling). */
  slackMs: 500,
};
