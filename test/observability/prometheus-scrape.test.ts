/**
 * A real Prometheus scrapes the Express example app (Redis store) under traffic: the series it
 * recorded carry the documented names and only the documented labels (no identity, key or path),
 * every alert expression of observability/alerts.yaml evaluates against them without error, and
 * Prometheus itself loads and evaluates the rules healthily.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AppNode, exampleApp, startApp } from '../support/apps.js';
import { type RedisProcess, startRedis } from '../support/redis-server.js';
import { exportedMetricNames } from './exported-metrics.js';
import { type PrometheusProcess, startPrometheus } from './prometheus-server.js';
import { OBSERVABILITY_DIR } from './promtool.js';

const RULES = join(OBSERVABILITY_DIR, 'alerts.yaml');
const API_KEY = 'pro-secret-key-31337';

/** The `expr` of every rule in a rules file (one-line and `|` blocks). */
function alertExpressions(text: string): { alert: string; expr: string }[] {
  const lines = text.split('\n');
  const out: { alert: string; expr: string }[] = [];
  let alert = '';
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    const named = /^\s*- alert: (\S+)/.exec(line);
    if (named !== null) alert = named[1] as string;
    const m = /^(\s*)expr: (.*)$/.exec(line);
    if (m === null) continue;
    if (m[2]?.trim() !== '|') {
      out.push({ alert, expr: m[2] as string });
      continue;
    }
    const indent = (m[1] as string).length;
    const body: string[] = [];
    while (i + 1 < lines.length) {
      const next = lines[i + 1] as string;
      if (next.trim() !== '' && next.length - next.trimStart().length <= indent) break;
      body.push(next.trim());
      i++;
    }
    out.push({ alert, expr: body.join(' ') });
  }
  return out;
}

/** Sends `n` requests and waits for all of them. */
async function send(app: AppNode, n: number, path: string, init: RequestInit = {}): Promise<number[]> {
  return Promise.all(
    Array.from({ length: n }, async () => {
      const response = await fetch(`${app.url}${path}`, init);
      await response.arrayBuffer();
      return response.status;
    }),
  );
}

describe('a real Prometheus scraping the Express example app', () => {
  let redis: RedisProcess;
  let app: AppNode;
  let prometheus: PrometheusProcess;

  beforeAll(async () => {
    redis = await startRedis();
    app = await startApp(exampleApp('express'), { REDIS_URL: redis.url, SLUICE_PREFIX: 'scrape' });
    prometheus = await startPrometheus([`127.0.0.1:${app.port}`], [RULES]);
    // Traffic: admitted, over the limit (the deny cache then answers), a shadow policy, leases.
    const statuses = [
      ...(await send(app, 40, '/limited')),
      ...(await send(app, 30, '/limited', { headers: { 'x-api-key': API_KEY } })),
      ...(await send(app, 10, '/shadow')),
      ...(await send(app, 30, '/leased')),
      ...(await send(app, 5, '/transfers/123e4567-e89b-12d3-a456-426614174000', { method: 'POST' })),
    ];
    expect(statuses).toContain(429);
    expect(statuses).toContain(200);
    // Until Prometheus has scraped the traffic.
    const deadline = Date.now() + 30_000;
    for (;;) {
      const result = await prometheus.api<{ result: { value: [number, string] }[] }>('query', {
        query: 'sum(sluice_decisions_total{job="sluice"})',
      });
      if (Number(result.result[0]?.value[1] ?? 0) >= statuses.length) break;
      if (Date.now() > deadline)
        throw new Error(`no scrape of the traffic after 30 s:\n${prometheus.output()}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  });

  afterAll(async () => {
    await prometheus?.stop();
    await app?.stop();
    await redis?.stop();
  });

  it('records every series under the documented names', async () => {
    const names = new Set(await prometheus.api<string[]>('label/__name__/values'));
    const sluice = [...names].filter((name) => name.startsWith('sluice_'));
    const exported = exportedMetricNames();
    expect(sluice.sort()).toEqual([...exported].sort());
  });

  it('labels series with policy, outcome, cause, source and le only: no identity, key or path', async () => {
    const series = await prometheus.api<Record<string, string>[]>('series', {
      'match[]': '{__name__=~"sluice_.+"}',
    });
    expect(series.length).toBeGreaterThan(20);
    const allowed = new Set(['__name__', 'job', 'instance', 'policy', 'outcome', 'cause', 'source', 'le']);
    for (const labels of series) {
      for (const name of Object.keys(labels)) expect(allowed.has(name), `label ${name}`).toBe(true);
    }
    const values = JSON.stringify(series.map(({ instance: _instance, ...rest }) => rest));
    expect(values).not.toMatch(/secret|31337|127\.0\.0\.1|scrape:|\/transfers|123e4567/);
    const burst = await prometheus.api<Record<string, string>[]>('series', {
      'match[]': 'sluice_decisions_total{policy="burst"}',
    });
    expect(burst.map((s) => s.outcome)).toEqual(expect.arrayContaining(['allowed', 'over_limit']));
  });

  it('evaluates every alert expression without error', async () => {
    const expressions = alertExpressions(readFileSync(RULES, 'utf8'));
    expect(expressions.length).toBeGreaterThanOrEqual(10);
    for (const { alert, expr } of expressions) {
      const result = await prometheus.api<{ resultType: string }>('query', { query: expr });
      expect(result.resultType, alert).toBe('vector');
    }
    // The over-limit traffic was recorded under its policy.
    const denied = await prometheus.api<{ result: { metric: Record<string, string> }[] }>('query', {
      query: 'sum by (policy) (sluice_decisions_total{outcome="over_limit"}) > 0',
    });
    expect(denied.result.map((r) => r.metric.policy)).toContain('burst');
  });

  it('loads the rules itself and evaluates them healthily', async () => {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const { groups } = await prometheus.api<{
        groups: { name: string; rules: { name: string; health: string; lastError?: string }[] }[];
      }>('rules');
      const rules = groups.flatMap((g) => g.rules);
      const evaluated = rules.filter((r) => r.health !== 'unknown');
      if (evaluated.length === rules.length) {
        expect(rules.length).toBe(alertExpressions(readFileSync(RULES, 'utf8')).length);
        for (const rule of rules) expect(rule.lastError ?? '', rule.name).toBe('');
        expect(rules.map((r) => r.health)).toEqual(rules.map(() => 'ok'));
        break;
      }
      if (Date.now() > deadline) throw new Error('the rules were not evaluated within 15 s');
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  });
});
