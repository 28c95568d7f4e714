/**
 * The service decides through the limiter's own path (`limiter.checkEntries`): with Redis stopped,
 * each rule's fail mode as the limiter applies it (a shadow rule failing `closed` does not fail the
 * call), core's breaker stops asking a store that keeps failing, and health follows the store.
 * A real redis-server, stopped and started again on its port; a real gRPC client.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisProcess, startRedis } from '../../../test/support/redis-server.js';
import {
  descriptor,
  type RlsClient,
  type RuntimeDir,
  rlsClient,
  runtimeDir,
  serviceEnv,
  startInProcess,
} from './harness.test-support.js';
import type { RunningServer } from './server.js';

const CONFIG = `
domain: paths
descriptors:
  - key: watched
    shadow_mode: true
    rate_limit: { unit: minute, requests_per_unit: 5, fail_mode: closed }
  - key: lenient
    rate_limit: { unit: minute, requests_per_unit: 5, fail_mode: open }
  - key: strict
    rate_limit: { unit: minute, requests_per_unit: 5 }
`;

let redis: RedisProcess;
let dir: RuntimeDir;
let server: RunningServer;
let client: RlsClient;

beforeAll(async () => {
  redis = await startRedis();
  dir = runtimeDir({ 'paths.yaml': CONFIG });
  server = await startInProcess(
    serviceEnv(dir, { REDIS_URL: `127.0.0.1:${redis.port}`, SLUICE_TIMEOUT_MS: '200' }),
  );
  client = rlsClient(server.grpcPort);
});
afterAll(async () => {
  client?.close();
  await server?.close();
  await redis?.stop();
  dir?.remove();
});

const ask = (...values: string[]) =>
  client.shouldRateLimit({ domain: 'paths', descriptors: values.map((v) => descriptor(v)) });

describe('the service on the limiter path, Redis stopped', () => {
  it('a shadow rule failing closed is shadowed, as in the limiter; an enforced closed rule fails the call', async () => {
    expect((await ask('watched=w', 'lenient=l')).overall_code).toBe('OK');
    await redis.stop();
    const reply = await ask('watched=w', 'lenient=l');
    expect(reply.overall_code).toBe('OK');
    expect(reply.statuses.map((s) => s.code)).toEqual(['OK', 'OK']);
    await expect(ask('strict=s')).rejects.toMatchObject({ code: 14 });
    expect(server.service.healthy).toBe(false);
  });

  it("core's breaker opens: the store is no longer asked, each call is answered by the fail modes", async () => {
    const { limiter } = server.service;
    for (let i = 0; i < 6; i++) await ask('lenient=l');
    expect(limiter.breakerState).toBe('open');
    const turnedAway = limiter.counters.store.errors.breaker_open;
    expect((await ask('lenient=l')).overall_code).toBe('OK');
    expect(limiter.counters.store.errors.breaker_open).toBe(turnedAway + 1);
    expect(server.service.stats.serviceCount('redis_error')).toBeGreaterThan(0);
  });

  it('Redis back: the probe finds it past the breaker, health and answers return', async () => {
    redis = await startRedis({ port: redis.port });
    const deadline = Date.now() + 10_000;
    while (!(await server.service.probeStore()) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    expect(server.service.healthy).toBe(true);
    expect(server.service.limiter.breakerState).toBe('closed');
    expect((await ask('strict=s')).overall_code).toBe('OK');
  });
});
