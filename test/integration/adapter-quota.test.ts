/**
 * A regional quota policy on every adapter setup (Express 5 and 4, Koa 3 and 2, NestJS on Express
 * and on Fastify, Fastify, Hono), over real HTTP: `quota: { service, bucket }` with `QuotaClient`
 * (the build of @sluice/server) on a real `sluice-server` process (memory store). Before its first
 * assignment the policy fails closed (503); once the share (5/s) is in its bucket, requests are
 * admitted from it and the rest get 429, with no store call per request.
 */
import { createLimiter, type Store } from '@sluice/core';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
// The build of @sluice/server (not a dependency of these tests), as test/quota/region.mjs uses it.
import { QuotaClient } from '../../packages/server/dist/index.js';
import { configRoot, quotaConfig, sleep, startQuotaServer } from '../quota/fleet.mjs';
import { HARNESSES, type Served } from './adapters.js';
import { request } from './client.js';

let config: ReturnType<typeof configRoot>;
let server: Awaited<ReturnType<typeof startQuotaServer>>;

beforeAll(async () => {
  config = configRoot(quotaConfig(5));
  server = await startQuotaServer({ root: config.root, redisUrl: '', ttlMs: 5000 });
});
afterAll(async () => {
  await server?.stop();
  config?.remove();
});

/** A store that fails the test if the limiter ever calls it. */
const NO_STORE: Store = {
  kind: 'none',
  decide: () => Promise.reject(new Error('a quota policy called the store')),
  reset: async () => {},
};

describe.each(HARNESSES)('$name', (harness) => {
  let served: Served | undefined;
  let client: { close(): void } | undefined;
  afterEach(async () => {
    await served?.close();
    client?.close();
    served = undefined;
  });

  test('admits from the assigned share, 429 past it, 503 before any assignment', async () => {
    client = new QuotaClient({
      address: `127.0.0.1:${server.port}`,
      domain: 'regions',
      clientId: `adapter-${harness.name.replace(/\W+/g, '-')}`,
      reportIntervalMs: 200,
    });
    const limiter = createLimiter({
      store: NO_STORE,
      policies: [
        {
          name: 'regional',
          limit: 5,
          window: '1s',
          failMode: 'closed',
          quota: { service: client, bucket: { api: harness.name } },
        },
      ],
    });
    served = await harness.serve({ limiter, identity: () => 'tenant' }, 'route');
    const get = () => request(`${served?.url}/items/1`);
    expect((await get()).status).toBe(503);
    // The first assignment, then a full bucket (5 tokens at 5/s).
    await sleep(1500);
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) statuses.push((await get()).status);
    const admitted = statuses.filter((s) => s === 200).length;
    expect(admitted).toBeGreaterThanOrEqual(5);
    expect(admitted).toBeLessThanOrEqual(6);
    expect(statuses.filter((s) => s === 429).length).toBe(8 - admitted);
  });
});
