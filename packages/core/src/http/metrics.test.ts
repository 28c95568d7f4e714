import {
  type Counter,
  type Histogram,
  type Meter,
  type MeterProvider,
  metrics as otelMetrics,
} from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { createLimiter } from '../limiter/index.js';
import type { DecisionEvent, MetricOutcome } from '../types.js';
import { createMetrics, escapeHelp, escapeLabelValue, PROMETHEUS_CONTENT_TYPE } from './metrics.js';
import { samplesOf } from './metrics.test-support.js';

function event(outcomes: [string, MetricOutcome][], durationMs = 1.5): DecisionEvent {
  return {
    policy: outcomes[0]?.[0],
    outcome: 'allowed',
    metricOutcomes: outcomes.map(([policy, outcome]) => ({ policy, outcome })),
    allowed: true,
    shadowed: false,
    source: 'store',
    durationMs,
  };
}

const samples = samplesOf;

describe('createMetrics', () => {
  it('counts by policy and outcome and renders Prometheus text', () => {
    const metrics = createMetrics({ meter: false });
    metrics.record(
      event([
        ['payments', 'allowed'],
        ['transfers', 'over_limit'],
      ]),
    );
    metrics.record(event([['payments', 'allowed']], 0.2));
    metrics.record(event([['shadow-probe', 'shadow_over_limit']], 30));
    metrics.record(event([['strict', 'fail_closed']], 100));
    metrics.record(event([['lenient', 'fail_open']], 2000));
    const text = metrics.render();
    expect(metrics.contentType).toBe(PROMETHEUS_CONTENT_TYPE);
    expect(text).toContain('# TYPE sluice_decisions_total counter\n');
    expect(text).toContain('# TYPE sluice_decision_duration_seconds histogram\n');
    expect(text.endsWith('\n')).toBe(true);
    const s = samples(text);
    expect(s.get('sluice_decisions_total{policy="payments",outcome="allowed"}')).toBe(2);
    expect(s.get('sluice_decisions_total{policy="transfers",outcome="over_limit"}')).toBe(1);
    expect(s.get('sluice_decisions_total{policy="shadow-probe",outcome="shadow_over_limit"}')).toBe(1);
    expect(s.get('sluice_decisions_total{policy="strict",outcome="fail_closed"}')).toBe(1);
    expect(s.get('sluice_decisions_total{policy="lenient",outcome="fail_open"}')).toBe(1);
    expect(s.get('sluice_decision_duration_seconds_count')).toBe(5);
    expect(s.get('sluice_decision_duration_seconds_sum')).toBeCloseTo(
      (1.5 + 0.2 + 30 + 100 + 2000) / 1000,
      9,
    );
    expect(s.get('sluice_decision_duration_seconds_bucket{le="0.0005"}')).toBe(1);
    expect(s.get('sluice_decision_duration_seconds_bucket{le="0.0025"}')).toBe(2);
    expect(s.get('sluice_decision_duration_seconds_bucket{le="0.05"}')).toBe(3);
    expect(s.get('sluice_decision_duration_seconds_bucket{le="0.1"}')).toBe(4);
    expect(s.get('sluice_decision_duration_seconds_bucket{le="1"}')).toBe(4);
    expect(s.get('sluice_decision_duration_seconds_bucket{le="+Inf"}')).toBe(5);
    // Labels: policy and outcome only.
    for (const key of s.keys()) {
      if (key.startsWith('sluice_decisions_total'))
        expect(key).toMatch(/^sluice_decisions_total\{policy="[^"]*",outcome="[a-z_]+"\}$/);
    }
  });

  it('buckets are cumulative and monotone', () => {
    const metrics = createMetrics({ meter: false });
    for (const ms of [0, 0.3, 0.9, 4, 7, 20, 60, 300, 700, 5000]) metrics.record(event([], ms));
    const s = samples(metrics.render());
    const buckets = [...s.entries()].filter(([k]) => k.includes('_bucket')).map(([, v]) => v);
    for (let i = 1; i < buckets.length; i++) expect(buckets[i]).toBeGreaterThanOrEqual(buckets[i - 1]!);
    expect(buckets.at(-1)).toBe(10);
  });

  it('escapes label values and help text', () => {
    expect(escapeLabelValue('a"b\\c\nd')).toBe('a\\"b\\\\c\\nd');
    expect(escapeHelp('a\\b\nc')).toBe('a\\\\b\\nc');
    const metrics = createMetrics({ meter: false });
    metrics.record(event([['we"ird', 'allowed']]));
    expect(metrics.render()).toContain('sluice_decisions_total{policy="we\\"ird",outcome="allowed"} 1');
  });

  it('reports declared policies at zero', () => {
    const s = samples(createMetrics({ meter: false, policies: ['burst'] }).render());
    expect(s.get('sluice_decisions_total{policy="burst",outcome="over_limit"}')).toBe(0);
    expect(s.get('sluice_decisions_total{policy="burst",outcome="allowed"}')).toBe(0);
  });

  it('records through an OpenTelemetry meter with policy and outcome attributes', () => {
    const added: [number, unknown][] = [];
    const recorded: number[] = [];
    const meter = {
      createCounter: () =>
        ({ add: (n: number, attrs: unknown) => added.push([n, attrs]) }) as unknown as Counter,
      createHistogram: () => ({ record: (v: number) => recorded.push(v) }) as unknown as Histogram,
    } as unknown as Meter;
    const metrics = createMetrics({ meter });
    metrics.record(event([['burst', 'over_limit']], 12));
    expect(added).toEqual([[1, { policy: 'burst', outcome: 'over_limit' }]]);
    expect(recorded).toEqual([0.012]);
  });

  it('picks up a global meter provider registered after it was created', () => {
    const metrics = createMetrics();
    metrics.record(event([['p', 'allowed']]));
    const added: unknown[] = [];
    const names: string[] = [];
    const meter = {
      createCounter: (name: string) => {
        names.push(name);
        return { add: (_n: number, attrs: unknown) => added.push(attrs) } as unknown as Counter;
      },
      createHistogram: (name: string) => {
        names.push(name);
        return { record: () => {} } as unknown as Histogram;
      },
    } as unknown as Meter;
    const provider = {
      getMeter: (name: string) => (name === '@sluice/core' ? meter : undefined),
    } as unknown as MeterProvider;
    expect(otelMetrics.setGlobalMeterProvider(provider)).toBe(true);
    try {
      metrics.record(event([['p', 'over_limit']]));
    } finally {
      otelMetrics.disable();
    }
    expect(names).toEqual(['sluice_decisions', 'sluice_near_limit', 'sluice_decision_duration']);
    expect(added).toEqual([{ policy: 'p', outcome: 'over_limit' }]);
  });

  it('works with the global no-op meter', () => {
    const metrics = createMetrics();
    expect(() => metrics.record(event([['p', 'allowed']]))).not.toThrow();
    expect(samples(metrics.render()).get('sluice_decisions_total{policy="p",outcome="allowed"}')).toBe(1);
  });

  it('subscribes to a limiter and unsubscribes on close', async () => {
    let now = 1_000_000;
    const limiter = createLimiter({
      policies: [{ name: 'burst', algorithm: 'fixed-window', limit: 2, window: '1m' }],
      clock: () => now,
    });
    const metrics = createMetrics({ meter: false, limiter });
    for (let i = 0; i < 3; i++) await limiter.check({ identity: 'a' });
    let s = samples(metrics.render());
    expect(s.get('sluice_decisions_total{policy="burst",outcome="allowed"}')).toBe(2);
    expect(s.get('sluice_decisions_total{policy="burst",outcome="over_limit"}')).toBe(1);
    metrics.close();
    now += 1;
    await limiter.check({ identity: 'b' });
    s = samples(metrics.render());
    expect(s.get('sluice_decisions_total{policy="burst",outcome="allowed"}')).toBe(2);
  });

  it('rejects bad buckets', () => {
    expect(() => createMetrics({ bucketsSeconds: [0.1, 0.05] })).toThrow('bucketsSeconds');
    expect(() => createMetrics({ bucketsSeconds: [] })).toThrow('bucketsSeconds');
  });
});
