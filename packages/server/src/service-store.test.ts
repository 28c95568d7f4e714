/**
 * core's `createServiceStore`: a Node limiter that asks a running sluice-server over POST /json
 * instead of Redis, so it enforces the service's policy set (real HTTP, real service on Redis).
 */
import { createLimiter, createServiceStore } from '@sluice/core';
import { protoDurationMs } from '@sluice/core/adapter';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisProcess, startRedis } from '../../../test/support/redis-server.js';
import {
  inOneMinuteWindow,
  type RuntimeDir,
  runtimeDir,
  serviceEnv,
  startInProcess,
} from './harness.test-support.js';
import type { RunningServer } from './server.js';

const CONFIG = `
domain: node-app
descriptors:
  - key: api
    rate_limit: { unit: minute, requests_per_unit: 3 }
  - key: burst
    rate_limit: { unit: minute, requests_per_unit: 1 }
`;

let redis: RedisProcess;
let dir: RuntimeDir;
let server: RunningServer;
let url: string;

beforeAll(async () => {
  redis = await startRedis();
  dir = runtimeDir({ 'app.yaml': CONFIG });
  server = await startInProcess(serviceEnv(dir, { REDIS_URL: `127.0.0.1:${redis.port}` }));
  url = `http://127.0.0.1:${server.httpPort}`;
  await inOneMinuteWindow(15_000);
});
afterAll(async () => {
  await server?.close();
  await redis?.stop();
  dir?.remove();
});

describe('createServiceStore', () => {
  it("the service's config decides: 3 a minute, then over_limit with a wait", async () => {
    const limiter = createLimiter({
      store: createServiceStore({ url, domain: 'node-app' }),
      policies: [{ name: 'api', limit: 3, window: '1m', algorithm: 'fixed-window' }],
      denyCache: false,
      timeoutMs: 2000,
    });
    const outcomes = [];
    for (let i = 0; i < 4; i++) outcomes.push(await limiter.check({ identity: 'tenant-1' }));
    expect(outcomes.map((d) => d.outcome)).toEqual(['allowed', 'allowed', 'allowed', 'over_limit']);
    expect(outcomes.map((d) => d.remaining)).toEqual([2, 1, 0, 0]);
    expect(outcomes[3]?.retryAfterMs).toBeGreaterThan(0);
    expect(outcomes[3]?.retryAfterMs).toBeLessThanOrEqual(60_000);
    expect((await limiter.check({ identity: 'tenant-2' })).outcome).toBe('allowed');
    expect((await limiter.peek({ identity: 'tenant-1' })).allowed).toBe(false);
  });

  it('several policies are one request to the service, all or nothing', async () => {
    const limiter = createLimiter({
      store: createServiceStore({ url, domain: 'node-app' }),
      policies: [
        { name: 'api', limit: 3, window: '1m', algorithm: 'fixed-window' },
        { name: 'burst', limit: 1, window: '1m', algorithm: 'fixed-window' },
      ],
      denyCache: false,
      timeoutMs: 2000,
    });
    expect((await limiter.check({ identity: 'both' })).outcome).toBe('allowed');
    const denied = await limiter.check({ identity: 'both' });
    expect(denied).toMatchObject({ outcome: 'over_limit', policy: 'burst' });
    // api was not charged by the denied request: 2 left after the first.
    const look = await limiter.peek({ identity: 'both', policies: ['api'] });
    expect(look.remaining).toBe(2);
  });

  it('a service that does not answer is a store failure: the fail mode decides', async () => {
    const store = createServiceStore({ url: 'http://127.0.0.1:9', domain: 'node-app' });
    const closed = createLimiter({
      store,
      policies: [{ name: 'api', limit: 3, window: '1m', algorithm: 'fixed-window' }],
    });
    expect((await closed.check({ identity: 'x' })).outcome).toBe('unavailable');
    const open = createLimiter({
      store,
      policies: [{ name: 'api', limit: 3, window: '1m', algorithm: 'fixed-window', failMode: 'open' }],
    });
    expect(await open.check({ identity: 'x' })).toMatchObject({ allowed: true, source: 'fail-open' });
  });

  it('bad options throw at construction, naming the option and value', () => {
    expect(() => createServiceStore({ url: 'ratelimit:8080', domain: 'd' })).toThrow(
      /"url" must be an http:\/\/ or https:\/\/ URL, got "ratelimit:8080"/,
    );
    expect(() => createServiceStore({ url, domain: '' })).toThrow(
      /"domain" must be a non-empty string, got ""/,
    );
  });

  it('durations as protojson writes them', () => {
    expect(protoDurationMs('42s')).toBe(42_000);
    expect(protoDurationMs('0.500s')).toBe(500);
    expect(protoDurationMs(undefined)).toBe(0);
  });
});
