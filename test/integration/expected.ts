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
      title: 'Too Many Requests',
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
  /**
   * Upper bound for one request's round trip while Redis is down: the store deadline is
   * 100 ms; the rest is slack for process scheduling on a shared 2-core machine.
   */
  deadlineMs: 750,
};
