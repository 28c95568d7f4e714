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
