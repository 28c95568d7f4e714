/**
 * What the service answers beyond the conformance table, through a real gRPC client: global
 * shadow mode, response headers (the reference's and draft-10), the problem+json raw_body, limit
 * overrides, Sluice's algorithms, bad requests, health and metrics.
 */
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
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
import type { RunningServer } from './server.js';

const CONFIG = `
domain: app
descriptors:
  - key: tenant
    rate_limit: { name: per-tenant, unit: minute, requests_per_unit: 2 }
    descriptors:
      - key: route
        rate_limit: { unit: minute, requests_per_unit: 5 }
  - key: bucket
    rate_limit: { unit: minute, requests_per_unit: 1, algorithm: token-bucket, burst: 3 }
`;

let dir: RuntimeDir | undefined;
let server: RunningServer | undefined;
let client: RlsClient | undefined;

async function start(env: Record<string, string> = {}): Promise<RlsClient> {
  dir = runtimeDir({ 'app.yaml': CONFIG });
  server = await startInProcess(serviceEnv(dir, env));
  client = rlsClient(server.grpcPort);
  await inOneMinuteWindow();
  return client;
}

afterEach(async () => {
  client?.close();
  await server?.close();
  dir?.remove();
  client = undefined;
  server = undefined;
});

/** The response headers of a reply, by name. */
const headersOf = (reply: { response_headers_to_add: readonly { key: string; value: string }[] }) =>
  Object.fromEntries(reply.response_headers_to_add.map((h) => [h.key, h.value]));

const tenant = (id: string) => ({ domain: 'app', descriptors: [descriptor(`tenant=${id}`)] });

describe('answers', () => {
  it('SHADOW_MODE: overall OK, statuses keep OVER_LIMIT, counted as global_shadow_mode', async () => {
    const rls = await start({ SHADOW_MODE: 'true' });
    for (let i = 0; i < 2; i++) expect((await rls.shouldRateLimit(tenant('a'))).overall_code).toBe('OK');
    const third = await rls.shouldRateLimit(tenant('a'));
    expect(third.overall_code).toBe('OK');
    expect(third.statuses[0]?.code).toBe('OVER_LIMIT');
    expect(third.raw_body.length).toBe(0);
    expect(server?.service.stats.serviceCount('global_shadow_mode')).toBe(1);
  });

  it('LIMIT_RESPONSE_HEADERS_ENABLED: RateLimit-Limit/Remaining/Reset of the descriptor closest to its limit', async () => {
    const rls = await start({ LIMIT_RESPONSE_HEADERS_ENABLED: 'true' });
    const reply = await rls.shouldRateLimit({
      domain: 'app',
      descriptors: [descriptor('tenant=h'), descriptor('tenant=h', 'route=/x')],
    });
    const headers = headersOf(reply);
    expect(headers['RateLimit-Limit']).toBe('2');
    expect(headers['RateLimit-Remaining']).toBe('1');
    expect(Number(headers['RateLimit-Reset'])).toBeGreaterThan(0);
    expect(Number(headers['RateLimit-Reset'])).toBeLessThanOrEqual(60);
  });

  it('SLUICE_RESPONSE_HEADERS=draft-10: RateLimit-Policy and RateLimit, one member per rule', async () => {
    const rls = await start({ SLUICE_RESPONSE_HEADERS: 'draft-10' });
    const reply = await rls.shouldRateLimit({
      domain: 'app',
      descriptors: [descriptor('tenant=d'), descriptor('tenant=d', 'route=/x')],
    });
    const headers = headersOf(reply);
    expect(headers['RateLimit-Policy']).toBe('"per-tenant";q=2;w=60, "tenant.route";q=5;w=60');
    expect(headers.RateLimit).toMatch(/^"per-tenant";r=1;t=\d+, "tenant.route";r=4;t=\d+$/);
  });

  it('over the limit: raw_body is problem+json naming the rule, never the descriptor values', async () => {
    const rls = await start();
    await rls.shouldRateLimit(tenant('secret-tenant'));
    await rls.shouldRateLimit(tenant('secret-tenant'));
    const denied = await rls.shouldRateLimit(tenant('secret-tenant'));
    expect(denied.overall_code).toBe('OVER_LIMIT');
    const status = denied.statuses[0];
    expect(status?.current_limit).toEqual({ name: 'per-tenant', requests_per_unit: 2, unit: 'MINUTE' });
    const waitSeconds = Number(status?.duration_until_reset?.seconds);
    expect(waitSeconds).toBeGreaterThanOrEqual(0);
    expect(waitSeconds).toBeLessThan(60);
    const body = JSON.parse(Buffer.from(denied.raw_body).toString('utf8'));
    expect(body).toMatchObject({
      status: 429,
      'violated-policies': ['per-tenant'],
      error: 'rate limit exceeded',
      policy: 'per-tenant',
    });
    expect(JSON.stringify(body)).not.toContain('secret-tenant');
    const metrics = await (await fetch(`http://127.0.0.1:${server?.httpPort}/metrics`)).text();
    expect(metrics).toContain('ratelimit_service_rate_limit_over_limit{domain="app",rule="tenant"} 1');
    expect(metrics).toContain('ratelimit_service_rate_limit_total_hits{domain="app",rule="tenant"} 3');
    expect(metrics).toContain(
      'ratelimit_service_rate_limit_within_limit{domain="app",rule="tenant.route"} 0',
    );
    expect(metrics).not.toContain('secret-tenant');
  });

  it('a Sluice algorithm: a token bucket holding 3, earning 1 a minute', async () => {
    const rls = await start();
    const bucket = { domain: 'app', descriptors: [descriptor('bucket=b')] };
    for (let i = 0; i < 3; i++)
      expect((await rls.shouldRateLimit(bucket)).statuses[0]?.limit_remaining).toBe(2 - i);
    const denied = await rls.shouldRateLimit(bucket);
    expect(denied.overall_code).toBe('OVER_LIMIT');
    // duration_until_reset of a denial is the wait until one token is back: just under a minute.
    const waitSeconds = Number(denied.statuses[0]?.duration_until_reset?.seconds);
    expect(waitSeconds).toBeGreaterThanOrEqual(55);
    expect(waitSeconds).toBeLessThanOrEqual(60);
  });

  it("Envoy's limit override on a descriptor: a fixed window of that limit", async () => {
    const rls = await start();
    const request = {
      domain: 'app',
      descriptors: [{ ...descriptor('anything=x'), limit: { requests_per_unit: 1, unit: 'HOUR' } }],
    };
    expect((await rls.shouldRateLimit(request)).statuses[0]).toMatchObject({
      code: 'OK',
      current_limit: { requests_per_unit: 1, unit: 'HOUR' },
    });
    expect((await rls.shouldRateLimit(request)).overall_code).toBe('OVER_LIMIT');
    // In a domain the config does not know, nothing limits, overrides included (as the reference).
    const unknown = { ...request, domain: 'nowhere' };
    for (let i = 0; i < 2; i++)
      expect((await rls.shouldRateLimit(unknown)).statuses[0]).toMatchObject({
        code: 'OK',
        current_limit: null,
      });
  });

  it('near_limit, within_limit and over_limit split hits as the reference does (NEAR_LIMIT_RATIO 0.8)', async () => {
    const rls = await start();
    const call = (hits: number) =>
      rls.shouldRateLimit({
        domain: 'app',
        hits_addend: hits,
        descriptors: [descriptor('tenant=n', 'route=/r')],
      });
    // limit 5, near above floor(5 * 0.8) = 4: hits 3 (1..3), then 2 (4..5: one near), then 1 (over).
    await call(3);
    await call(2);
    expect((await call(1)).overall_code).toBe('OVER_LIMIT');
    const metrics = await (await fetch(`http://127.0.0.1:${server?.httpPort}/metrics`)).text();
    const series = (stat: string) =>
      new RegExp(`ratelimit_service_rate_limit_${stat}\\{domain="app",rule="tenant.route"\\} (\\d+)`).exec(
        metrics,
      )?.[1];
    expect([
      series('total_hits'),
      series('within_limit'),
      series('near_limit'),
      series('over_limit'),
    ]).toEqual(['6', '5', '1', '1']);
  });

  it('bad requests: INVALID_ARGUMENT over gRPC, 400 over HTTP, counted as service_error', async () => {
    const rls = await start();
    await expect(
      rls.shouldRateLimit({ domain: '', descriptors: [descriptor('tenant=x')] }),
    ).rejects.toMatchObject({ code: 3 });
    await expect(rls.shouldRateLimit({ domain: 'app', descriptors: [] })).rejects.toMatchObject({ code: 3 });
    const reply = await postJson(server?.httpPort ?? 0, { domain: 'app', descriptors: 'nope' });
    expect(reply.status).toBe(400);
    expect(server?.service.stats.serviceCount('service_error')).toBe(2);
  });

  it('health: gRPC SERVING and GET /healthcheck 200 OK; unknown paths 404', async () => {
    const rls = await start();
    expect(await rls.health()).toBe('SERVING');
    const health = await fetch(`http://127.0.0.1:${server?.httpPort}/healthcheck`);
    expect(health.status).toBe(200);
    expect(await health.text()).toBe('OK');
    expect((await fetch(`http://127.0.0.1:${server?.httpPort}/nope`)).status).toBe(404);
  });

  it('RUNTIME_WATCH_ROOT=true (the default) reloads on a change anywhere below RUNTIME_ROOT', async () => {
    const rls = await start({ RUNTIME_WATCH_ROOT: 'true' });
    dir?.write(
      'more.yaml',
      'domain: more\ndescriptors:\n  - key: k\n    rate_limit: { unit: hour, requests_per_unit: 9 }\n',
    );
    const deadline = Date.now() + 5000;
    while (!server?.service.config.domains.has('more') && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    const reply = await rls.shouldRateLimit({ domain: 'more', descriptors: [descriptor('k=v')] });
    expect(reply.statuses[0]?.current_limit?.requests_per_unit).toBe(9);
  });

  it('RUNTIME_ROOT a symlink swapped atomically to another version: reloads within a second, then watches the new target', async () => {
    const base = mkdtempSync(join(tmpdir(), 'sluice-rls-versions-'));
    try {
      const domainFile = (domain: string, requests: number) =>
        `domain: ${domain}\ndescriptors:\n  - key: k\n    rate_limit: { unit: hour, requests_per_unit: ${requests} }\n`;
      const version = (name: string, domain: string, requests: number): string => {
        const configDir = join(base, name, 'ratelimit', 'config');
        mkdirSync(configDir, { recursive: true });
        writeFileSync(join(configDir, 'app.yaml'), domainFile(domain, requests));
        return configDir;
      };
      const swapTo = (name: string) => {
        symlinkSync(name, join(base, 'next'));
        renameSync(join(base, 'next'), join(base, 'current'));
      };
      version('v1', 'one', 1);
      symlinkSync('v1', join(base, 'current'));
      server = await startInProcess({
        ...serviceEnv({ root: join(base, 'current'), configDir: '', write: () => {}, remove: () => {} }),
        RUNTIME_WATCH_ROOT: 'true',
      });
      client = rlsClient(server.grpcPort);
      const loaded = async (domain: string, withinMs: number) => {
        const deadline = Date.now() + withinMs;
        while (!server?.service.config.domains.has(domain) && Date.now() < deadline)
          await new Promise((r) => setTimeout(r, 20));
        return server?.service.config.domains.has(domain);
      };
      expect(await loaded('one', 0)).toBe(true);
      const v2 = version('v2', 'two', 2);
      swapTo('v2');
      expect(await loaded('two', 1200)).toBe(true);
      expect(server.service.config.domains.has('one')).toBe(false);
      // The new target is watched: a change inside it reloads.
      writeFileSync(join(v2, 'more.yaml'), domainFile('more', 3));
      expect(await loaded('more', 1200)).toBe(true);
      version('v3', 'three', 4);
      swapTo('v3');
      expect(await loaded('three', 1200)).toBe(true);
      const reply = await client.shouldRateLimit({ domain: 'three', descriptors: [descriptor('k=v')] });
      expect(reply.statuses[0]?.current_limit?.requests_per_unit).toBe(4);
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });
});
