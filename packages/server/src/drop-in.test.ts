/**
 * Requests Envoy sends every day that the reference (envoyproxy/ratelimit) answers in a way of its
 * own, through a real gRPC client on a real redis-server: the same counter several times in one
 * request, a rule and limit overrides on the same entries, `hits_addend: 0` on a
 * `requests_per_unit: 0` rule, what an OVER_LIMIT status and `duration_until_reset` say, and which
 * descriptor the response headers come from.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type RedisProcess, startRedis } from '../../../test/support/redis-server.js';
import {
  descriptor,
  inOneMinuteWindow,
  postJson,
  type RlsClient,
  type RuntimeDir,
  rlsClient,
  runtimeDir,
  serviceEnv,
  startInProcess,
} from './harness.test-support.js';
import type { RlsDescriptorStatus, RlsResponse } from './rls-types.js';
import type { RunningServer } from './server.js';

const CONFIG = `
domain: app
descriptors:
  - key: tenant
    rate_limit: { unit: minute, requests_per_unit: 3 }
  - key: user
    rate_limit: { unit: minute, requests_per_unit: 2 }
  - key: path
    value: files*
    share_threshold: true
    rate_limit: { unit: minute, requests_per_unit: 3 }
  - key: blocked
    rate_limit: { unit: minute, requests_per_unit: 0 }
  - key: bucket
    rate_limit: { unit: minute, requests_per_unit: 5, algorithm: token-bucket, burst: 5 }
`;

let redis: RedisProcess;
let dir: RuntimeDir;
let server: RunningServer | undefined;
let client: RlsClient | undefined;
let run = 0;

beforeAll(async () => {
  redis = await startRedis();
  dir = runtimeDir({ 'app.yaml': CONFIG });
});
afterAll(async () => {
  await redis?.stop();
  dir?.remove();
});
afterEach(async () => {
  client?.close();
  await server?.close();
  client = undefined;
  server = undefined;
});

async function start(env: Record<string, string> = {}): Promise<RlsClient> {
  run += 1;
  server = await startInProcess(
    serviceEnv(dir, {
      REDIS_URL: `127.0.0.1:${redis.port}`,
      CACHE_KEY_PREFIX: `drop-in-${run}-${Date.now()}:`,
      ...env,
    }),
  );
  client = rlsClient(server.grpcPort);
  await inOneMinuteWindow();
  return client;
}

type Descriptor = ReturnType<typeof descriptor> & {
  limit?: { requests_per_unit: number; unit: string };
  hits_addend?: { value: string };
};
const ask = (descriptors: Descriptor[], hits = 0) =>
  (client as RlsClient).shouldRateLimit({ domain: 'app', hits_addend: hits, descriptors });
const codes = (reply: RlsResponse) => reply.statuses.map((s) => [s.code, s.limit_remaining]);
const override = (pair: string, requests: number, unit: string): Descriptor => ({
  ...descriptor(pair),
  limit: { requests_per_unit: requests, unit },
});
const look = (pair: string): Descriptor => ({ ...descriptor(pair), hits_addend: { value: '0' } });
const msOf = (s: RlsDescriptorStatus | undefined) =>
  Number(s?.duration_until_reset?.seconds) * 1000 + (s?.duration_until_reset?.nanos ?? 0) / 1e6;

/** The service is healthy and counted no store failure. */
async function expectHealthy(): Promise<void> {
  expect(server?.service.stats.serviceCount('redis_error')).toBe(0);
  expect(await client?.health()).toBe('SERVING');
  expect((await fetch(`http://127.0.0.1:${server?.httpPort}/healthcheck`)).status).toBe(200);
}

describe('the same counter several times in one request', () => {
  it('an identical descriptor twice: each occurrence counted in order, all or nothing', async () => {
    await start();
    const twice = [descriptor('tenant=a'), descriptor('tenant=a')];
    expect(codes(await ask(twice))).toEqual([
      ['OK', 2],
      ['OK', 1],
    ]);
    const denied = await ask(twice);
    expect(denied.overall_code).toBe('OVER_LIMIT');
    expect(codes(denied)).toEqual([
      ['OK', 0],
      ['OVER_LIMIT', 0],
    ]);
    // The denied request charged nothing: one more fits.
    expect(codes(await ask([descriptor('tenant=a')]))).toEqual([['OK', 0]]);
    await expectHealthy();
  });

  it('a look after a charge of the same counter sees the charge', async () => {
    await start();
    expect(codes(await ask([descriptor('tenant=l'), look('tenant=l'), descriptor('tenant=l')]))).toEqual([
      ['OK', 2],
      ['OK', 2],
      ['OK', 1],
    ]);
    expect(codes(await ask([look('tenant=l')]))).toEqual([['OK', 1]]);
    await expectHealthy();
  });

  it('two values under one share_threshold wildcard share one counter', async () => {
    await start();
    expect(codes(await ask([descriptor('path=files1'), descriptor('path=files2')]))).toEqual([
      ['OK', 2],
      ['OK', 1],
    ]);
    expect(codes(await ask([descriptor('path=files3')]))).toEqual([['OK', 0]]);
    await expectHealthy();
  });

  it('a rule and an override on the same entries in one request: two counters', async () => {
    await start();
    const reply = await ask([descriptor('tenant=o'), override('tenant=o', 5, 'MINUTE')]);
    expect(codes(reply)).toEqual([
      ['OK', 2],
      ['OK', 4],
    ]);
    await expectHealthy();
  });

  it('thousands of descriptors on one counter: the first ones fit, the rest are over the limit', async () => {
    await start();
    const many = Array.from({ length: 8000 }, () => descriptor('tenant=m'));
    const reply = await ask(many);
    expect(reply.overall_code).toBe('OVER_LIMIT');
    expect(codes(reply).slice(0, 4)).toEqual([
      ['OK', 2],
      ['OK', 1],
      ['OK', 0],
      ['OVER_LIMIT', 0],
    ]);
    expect(reply.statuses.filter((s) => s.code === 'OVER_LIMIT')).toHaveLength(7997);
    await expectHealthy();
  });

  it('thousands of distinct counters: answered, or refused as RESOURCE_EXHAUSTED; never a store failure', async () => {
    await start();
    const many = Array.from({ length: 8000 }, (_, i) => descriptor(`tenant=t${i}`));
    try {
      const reply = await ask(many);
      expect(reply.overall_code).toBe('OK');
      expect(reply.statuses).toHaveLength(8000);
    } catch (error) {
      expect(error).toMatchObject({ code: 8 });
      const json = await postJson(server?.httpPort ?? 0, { domain: 'app', descriptors: many });
      expect(json.status).toBe(400);
    }
    await expectHealthy();
  });
});

describe('separate counters', () => {
  it('a 3/minute rule alternated with a 5/hour override on the same entries: 3 + 5 admitted', async () => {
    await start();
    let admitted = 0;
    for (let i = 0; i < 16; i++) {
      const reply = await ask([i % 2 === 0 ? descriptor('tenant=s') : override('tenant=s', 5, 'HOUR')]);
      if (reply.overall_code === 'OK') admitted += 1;
    }
    expect(admitted).toBe(8);
  });

  it('two overrides with different units on the same entries: 2 + 3 admitted', async () => {
    await start();
    let admitted = 0;
    for (let i = 0; i < 10; i++) {
      const reply = await ask([
        i % 2 === 0 ? override('anything=x', 2, 'MINUTE') : override('anything=x', 3, 'HOUR'),
      ]);
      if (reply.overall_code === 'OK') admitted += 1;
    }
    expect(admitted).toBe(5);
  });
});

describe('requests_per_unit: 0', () => {
  it('hits_addend 0 looks: OK with remaining 0, and the other descriptors are charged', async () => {
    await start();
    const reply = await ask([look('blocked=x'), descriptor('tenant=z')]);
    expect(reply.overall_code).toBe('OK');
    expect(codes(reply)).toEqual([
      ['OK', 0],
      ['OK', 2],
    ]);
    expect(codes(await ask([descriptor('tenant=z')]))).toEqual([['OK', 1]]);
    // With hits it is over the limit and nothing is charged (the OK status counts its own hits).
    expect(codes(await ask([descriptor('blocked=x'), descriptor('tenant=z')]))).toEqual([
      ['OVER_LIMIT', 0],
      ['OK', 0],
    ]);
    expect(codes(await ask([look('tenant=z')]))).toEqual([['OK', 1]]);
  });
});

describe('what an answer says', () => {
  /** Milliseconds to the end of the current minute window. */
  const windowLeftMs = () => 60_000 - (Date.now() % 60_000);

  it('OVER_LIMIT reports limit_remaining 0, also when some units are left but not enough', async () => {
    await start();
    expect(codes(await ask([descriptor('tenant=r')], 2))).toEqual([['OK', 1]]);
    expect(codes(await ask([descriptor('tenant=r')], 2))).toEqual([['OVER_LIMIT', 0]]);
  });

  it('duration_until_reset of a fixed-window rule is the end of the window: looks, cost above the limit, blocked requests', async () => {
    await start();
    const near = (s: RlsDescriptorStatus | undefined) => {
      expect(Math.abs(msOf(s) - windowLeftMs())).toBeLessThan(1500);
    };
    near((await ask([look('tenant=w')])).statuses[0]);
    near((await ask([descriptor('tenant=w')], 5)).statuses[0]);
    const blocked = await ask([descriptor('blocked=w'), descriptor('tenant=w2')]);
    expect(blocked.overall_code).toBe('OVER_LIMIT');
    near(blocked.statuses[0]);
    near(blocked.statuses[1]);
    near((await ask([descriptor('tenant=w')])).statuses[0]);
  });

  it('several OVER_LIMIT descriptors: the reference headers come from the last one', async () => {
    await start({ LIMIT_RESPONSE_HEADERS_ENABLED: 'true' });
    for (let i = 0; i < 3; i++) await ask([descriptor('tenant=h')]);
    for (let i = 0; i < 2; i++) await ask([descriptor('user=h')]);
    const reply = await ask([descriptor('tenant=h'), descriptor('user=h')]);
    expect(reply.statuses.map((s) => s.code)).toEqual(['OVER_LIMIT', 'OVER_LIMIT']);
    const headers = Object.fromEntries(reply.response_headers_to_add.map((h) => [h.key, h.value]));
    expect(headers['RateLimit-Limit']).toBe('2');
    expect(headers['RateLimit-Remaining']).toBe('0');
  });
});
