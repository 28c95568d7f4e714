import { createLimiter, toHttpVerdict } from '@sluice/core';
import { problemJson } from '@sluice/core/adapter';

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

/**
 * The Sluice policy for a path: the default algorithm (token bucket). `lease` (`{ units, ttlMs }`,
 * the leased setup) adds a lease to it; undefined: none.
 */
export function sluicePolicy(path, lease) {
  return {
    name: 'api',
    algorithm: 'token-bucket',
    limit: quotaFor(path),
    window: WINDOW_MS,
    ...(lease === undefined ? {} : { lease }),
  };
}

/** The key prefix of a Sluice server: the leased setup keeps its own keys in a shared Redis. */
export function sluicePrefix(framework, store, path, lease) {
  return `bench-${framework}-${store}${lease === undefined ? '' : '-leased'}-${path}`;
}

export const API_KEY_HEADER = 'x-api-key';

/**
 * The answer Sluice's adapters give every denied request of the deny path, built by core as the
 * adapters build it (a second request of one identity, `toHttpVerdict`, `problemJson`), sent as
 * is by the `fixed-429` reference servers: what answering a denial costs a framework with no
 * limiter deciding anything, the least any limiter's deny path pays.
 */
export const DENY_RESPONSE = await (async () => {
  const limiter = createLimiter({ policies: [sluicePolicy('deny')] });
  await limiter.check({ identity: 'reference' });
  const verdict = toHttpVerdict(await limiter.check({ identity: 'reference' }));
  if (verdict.action !== 'deny')
    throw new Error('config: the deny-path policy did not deny its second request');
  return Object.freeze({ status: verdict.status, headers: verdict.headers, body: problemJson(verdict.body) });
})();
