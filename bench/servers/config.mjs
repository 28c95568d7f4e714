/**
 * What every benchmark server limits, whatever the framework and the limiter:
 * GET /limited answers {"ok":true}; the identity is the x-api-key header.
 * - allowed path: a quota no identity uses up during a run;
 * - deny path: one request per hour, and the load generator sends one identity, so all but
 *   the first request are denied with 429.
 */
export const WINDOW_MS = 3_600_000;

/** The quota per identity for a path. */
export function quotaFor(path) {
  if (path === 'allowed') return 1_000_000;
  if (path === 'deny') return 1;
  throw new Error(`unknown path ${path}`);
}

/** The Sluice policy for a path: the default algorithm (token bucket). */
export function sluicePolicy(path) {
  return { name: 'api', algorithm: 'token-bucket', limit: quotaFor(path), window: WINDOW_MS };
}

export const API_KEY_HEADER = 'x-api-key';

/**
 * The answer Sluice's adapters give every denied request of the deny path (taken from one),
 * sent as is by the `fixed-429` reference servers: what answering a denial costs a framework
 * with no limiter deciding anything, the least any limiter's deny path pays.
 */
export const DENY_RESPONSE = Object.freeze({
  status: 429,
  headers: Object.freeze({
    'content-type': 'application/problem+json',
    ratelimit: '"api";r=0;t=3600',
    'ratelimit-policy': '"api";q=1;w=3600',
    'retry-after': '3600',
  }),
  body: JSON.stringify({
    type: 'https://iana.org/assignments/http-problem-types#quota-exceeded',
    title: 'Quota Exceeded',
    status: 429,
    'violated-policies': ['api'],
    error: 'rate limit exceeded',
    policy: 'api',
    retry_after_seconds: 3600,
  }),
});
