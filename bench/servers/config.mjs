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
 * The paths Sluice's servers alone serve (the usual limiters have no such policies), each keyed as
 * the allowed path: `concurrent`, a concurrency policy alone (the example apps' `in-flight`: 3 in
 * flight per identity, never reached with 8 connections over 10k identities; the slot is released
 * when the response ends); `queued`, the allowed path's token bucket with `maxWaitMs: 1000`, under
 * its limit (it never waits: what a waiting policy costs a request it admits at once).
 */
export const SLUICE_ONLY_PATHS = Object.freeze(['concurrent', 'queued']);

/**
 * The Sluice policy for a path: the default algorithm (token bucket), or a path of
 * `SLUICE_ONLY_PATHS`. `lease` (`{ units, ttlMs }`, the leased setup) adds a lease to the token
 * bucket; undefined: none.
 */
export function sluicePolicy(path, lease) {
  if (path === 'concurrent') return { name: 'in-flight', algorithm: 'concurrency', limit: 3, leaseMs: '10s' };
  if (path === 'queued') return { ...sluicePolicy('allowed', lease), maxWaitMs: 1000 };
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
