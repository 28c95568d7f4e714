/** registerPromClient with the real prom-client: one registry serves the app's and Sluice's metrics. */
import { Counter, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createLimiter } from '../limiter/create-limiter.js';
import { createMetrics } from './metrics.js';
import { sampleLines, tenPerMinute } from './metrics.test-support.js';
import { registerPromClient } from './metrics-prom-client.js';

describe('registerPromClient (prom-client 15)', () => {
  it("serves the same samples as the built-in renderer, beside the app's own metrics", async () => {
    const { limiter, metrics } = tenPerMinute();
    const registry = new Registry();
    const appCounter = new Counter({
      name: 'app_requests_total',
      help: 'App requests.',
      registers: [registry],
    });
    const registration = registerPromClient(metrics, registry);
    expect(registration.names).toContain('sluice_decisions_total');
    expect(registration.names).toContain('sluice_store_errors_total');

    for (let i = 0; i < 12; i++) await limiter.check({ identity: 'a' });
    appCounter.inc();
    const text = await registry.metrics();
    expect(text).toContain('app_requests_total 1');
    expect(text).toContain('# TYPE sluice_decisions_total counter');
    expect(text).toContain('# TYPE sluice_decision_duration_seconds histogram');
    expect(text).toContain('sluice_decisions_total{policy="ten",outcome="allowed"} 10');
    expect(text).toContain('sluice_decisions_total{policy="ten",outcome="over_limit"} 2');
    expect(text).toContain('sluice_near_limit_total{policy="ten"} 3');
    expect(text).toContain('sluice_store_errors_total{cause="timeout"} 0');
    expect(text).toContain('sluice_decision_duration_seconds_bucket{le="+Inf"} 12');
    // The deny cache answered the 12th check: a family that appeared after registration.
    const sluiceFromRegistry = sampleLines(text).filter((l) => l.startsWith('sluice_'));
    const again = sampleLines(await registry.metrics()).filter((l) => l.startsWith('sluice_'));
    expect(again).toEqual(sampleLines(metrics.render()));
    expect(again.length).toBeGreaterThan(sluiceFromRegistry.length);

    // JSON for AggregatorRegistry: counters summed, gauges max.
    const json = await registry.getMetricsAsJSON();
    const timeout = json.find((m) => m.name === 'sluice_store_timeout_seconds');
    expect(timeout).toMatchObject({ type: 'gauge', aggregator: 'max' });
    expect(json.find((m) => m.name === 'sluice_decisions_total')).toMatchObject({ aggregator: 'sum' });

    registration.unregister();
    expect(await registry.metrics()).not.toContain('sluice_');
    expect(await registry.metrics()).toContain('app_requests_total 1');
  });

  it('aggregates across cluster workers with AggregatorRegistry', async () => {
    const { AggregatorRegistry } = await import('prom-client');
    const workers = await Promise.all(
      [3, 4].map(async (checks) => {
        const limiter = createLimiter({ policies: [{ name: 'p', limit: 100, window: '1m' }] });
        const metrics = createMetrics({ meter: false, limiter });
        const registry = new Registry();
        registerPromClient(metrics, registry);
        for (let i = 0; i < checks; i++) await limiter.check({ identity: 'a' });
        return registry.getMetricsAsJSON();
      }),
    );
    const merged = AggregatorRegistry.aggregate(workers);
    const text = await merged.metrics();
    expect(text).toContain('sluice_decisions_total{policy="p",outcome="allowed"} 7');
    expect(text).toContain('sluice_store_calls_total 7');
    expect(text).toContain('sluice_store_timeout_seconds 0.1');
  });

  it('rejects a registry without registerMetric', () => {
    expect(() => registerPromClient(createMetrics({ meter: false }), {} as never)).toThrow(
      /"registry" must be a prom-client Registry/,
    );
  });
});
