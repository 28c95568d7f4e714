/**
 * `/metrics` of the service shows the limiter's own series, by core's rule (`createMetrics`):
 * decisions by policy and outcome, store calls, failures by cause (a paused Redis: timeouts, then
 * the breaker turning calls away), the breaker's state, script calls; labelled by policy names,
 * outcomes and causes only, never a descriptor value; the exposition passes `promtool check metrics`.
 * A real redis-server (paused with SIGSTOP, resumed with SIGCONT), a real gRPC client.
 */
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisProcess, startRedis } from '../../../test/support/redis-server.js';
import {
  descriptor,
  inOneMinuteWindow,
  type RlsClient,
  type RuntimeDir,
  rlsClient,
  runtimeDir,
  sample,
  serviceEnv,
  startInProcess,
} from './harness.test-support.js';
import type { RunningServer } from './server.js';

// rule-0 is `strict`, rule-1 `lenient` (the config's rules, numbered in order).
const CONFIG = `
domain: counted
descriptors:
  - key: strict
    rate_limit: { unit: minute, requests_per_unit: 2 }
  - key: lenient
    rate_limit: { unit: minute, requests_per_unit: 100, fail_mode: open }
`;

let redis: RedisProcess;
let dir: RuntimeDir;
let server: RunningServer;
let client: RlsClient;

beforeAll(async () => {
  redis = await startRedis();
  dir = runtimeDir({ 'counted.yaml': CONFIG });
  server = await startInProcess(
    serviceEnv(dir, { REDIS_URL: `127.0.0.1:${redis.port}`, SLUICE_TIMEOUT_MS: '300' }),
  );
  client = rlsClient(server.grpcPort);
});
afterAll(async () => {
  client?.close();
  await server?.close();
  process.kill(redis.pid, 'SIGCONT');
  await redis?.stop();
  dir?.remove();
});

const ask = (...values: string[]) =>
  client.shouldRateLimit({ domain: 'counted', descriptors: values.map((v) => descriptor(v)) });

const scrape = async (): Promise<string> =>
  (await fetch(`http://127.0.0.1:${server.httpPort}/metrics`)).text();

/** The lines of the limiter's families (`sluice_*`, the regional quota's aside). */
const limiterLines = (text: string): string =>
  `${text
    .split('\n')
    .filter((line) => /^(# (HELP|TYPE) )?sluice_/.test(line) && !/sluice_quota_/.test(line))
    .join('\n')}\n`;

describe("the service's /metrics shows the limiter's series", () => {
  it('decisions by policy and outcome, store and script calls, the breaker closed; no descriptor value', async () => {
    await inOneMinuteWindow();
    const replies = [];
    for (let i = 0; i < 3; i++) replies.push(await ask('strict=secret-tenant-9'));
    expect(replies.map((r) => r.overall_code)).toEqual(['OK', 'OK', 'OVER_LIMIT']);
    await ask('lenient=secret-tenant-9');

    const text = await scrape();
    expect(sample(text, 'sluice_decisions_total{policy="rule-0",outcome="allowed"}')).toBe(2);
    expect(sample(text, 'sluice_decisions_total{policy="rule-0",outcome="over_limit"}')).toBe(1);
    expect(sample(text, 'sluice_decisions_total{policy="rule-1",outcome="allowed"}')).toBe(1);
    expect(sample(text, 'sluice_decision_duration_seconds_count')).toBe(4);
    expect(sample(text, 'sluice_store_calls_total')).toBeGreaterThanOrEqual(4);
    expect(sample(text, 'sluice_store_duration_seconds_count')).toBeGreaterThanOrEqual(4);
    expect(sample(text, 'sluice_script_calls_total')).toBeGreaterThanOrEqual(4);
    expect(sample(text, 'sluice_store_errors_total{cause="timeout"}')).toBe(0);
    expect(sample(text, 'sluice_store_errors_total{cause="breaker_open"}')).toBe(0);
    expect(sample(text, 'sluice_breaker_open')).toBe(0);
    expect(sample(text, 'sluice_store_timeout_seconds')).toBe(0.3);
    // The service's own counters stay beside them.
    expect(sample(text, 'ratelimit_service_rate_limit_total_hits{domain="counted",rule="strict"}')).toBe(3);
    expect(text).not.toContain('secret-tenant');
    const labels = [...text.matchAll(/^sluice_[a-z_]+\{([^}]*)\}/gm)].flatMap((m) =>
      (m[1] as string).split(',').map((pair) => pair.split('=')[0]),
    );
    expect([...new Set(labels)].sort()).toEqual(['cause', 'le', 'outcome', 'policy', 'source']);
  });

  it('Redis paused: timeouts, fail-open decisions, then the open breaker, each counted', async () => {
    process.kill(redis.pid, 'SIGSTOP');
    try {
      for (let i = 0; i < 8; i++) expect((await ask('lenient=l')).overall_code).toBe('OK');
    } finally {
      process.kill(redis.pid, 'SIGCONT');
    }
    expect(server.service.limiter.breakerState).not.toBe('closed');
    const text = await scrape();
    const { errors } = server.service.limiter.counters.store;
    expect(errors.timeout).toBeGreaterThan(0);
    expect(errors.breaker_open).toBeGreaterThan(0);
    expect(sample(text, 'sluice_store_errors_total{cause="timeout"}')).toBe(errors.timeout);
    expect(sample(text, 'sluice_store_errors_total{cause="breaker_open"}')).toBe(errors.breaker_open);
    expect(sample(text, 'sluice_breaker_open')).toBe(1);
    expect(sample(text, 'sluice_decisions_total{policy="rule-1",outcome="fail_open"}')).toBe(8);
  });

  it('the exposition passes promtool check metrics', async () => {
    const input = limiterLines(await scrape());
    expect(input).toContain('# TYPE sluice_decisions_total counter');
    const check = spawnSync('promtool', ['check', 'metrics'], { input, encoding: 'utf8' });
    expect(check.error).toBeUndefined();
    expect(`${check.stdout}${check.stderr}`).toBe('');
    expect(check.status).toBe(0);
  });
});
