/**
 * Route keys never come from the client's path: a route-scoped policy in app-wide middleware,
 * 1,000 random paths (most of them 404s) on every adapter over real HTTP, a real Redis: the
 * store holds a handful of keys, and none holds the paths' text.
 */
import { createLimiter, RedisStore } from '@sluice/core';
import fc from 'fast-check';
import { afterEach, describe, expect, test } from 'vitest';
import { useRedis } from '../support/redis-fixture.js';
import { HARNESSES, type Served } from './adapters.js';
import { request } from './client.js';

const fixture = useRedis();
let run = 0;

/** 1,000 distinct paths a client could send, each with a word of its own in it. */
const PATHS = fc
  .sample(fc.array(fc.stringMatching(/^[a-z][a-z0-9-]{2,11}$/), { minLength: 1, maxLength: 4 }), {
    numRuns: 1_000,
    seed: 7,
  })
  .map((segments, i) => `/${segments.join('/')}/w${i}x`);

describe.each(HARNESSES)('$name', (harness) => {
  let served: Served | undefined;
  afterEach(async () => {
    await served?.close();
    served = undefined;
  });

  test('1,000 random paths app-wide make a handful of keys, none holding a path', async () => {
    await fixture.client.flushall();
    const prefix = `routes${++run}`;
    const limiter = createLimiter({
      store: new RedisStore({ client: fixture.client }),
      prefix,
      policies: [{ name: 'api', algorithm: 'fixed-window', limit: 100_000, window: '1m', scope: 'route' }],
    });
    served = await harness.serve({ limiter }, 'app');
    for (const path of PATHS) await request(`${served.url}${path}`);
    // A route every test app serves (Nest's guards see no 404 at all): at least its key is there.
    expect((await request(`${served.url}/items/1`)).status).toBe(200);
    const keys = await fixture.client.keys(`${prefix}*`);
    expect(keys.length).toBeGreaterThan(0);
    expect(keys.length).toBeLessThanOrEqual(3);
    for (const key of keys) expect(key).not.toMatch(/w\d+x/);
  });
});
