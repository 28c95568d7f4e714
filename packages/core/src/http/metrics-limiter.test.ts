/**
 * The limiter's own counters as metrics: near-limit decisions, store calls and errors by cause,
 * the breaker, store latency and deadline, lease units, remembered denials, script calls and
 * NOSCRIPT reloads against a real redis-server.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { useRedis } from '../../../../test/support/redis-fixture.js';
import { createLimiter } from '../limiter/create-limiter.js';
import { SwitchableStore } from '../limiter/test-stores.test-support.js';
import { RedisStore } from '../stores/redis-store.js';
import { createMetrics } from './metrics.js';
import { samplesOf, tenPerMinute } from './metrics.test-support.js';

const T0 = 1_764_400_200_000;

/** Time the lease-units property may take: 80 runs take up to 4.2 s under load, against a 5 s default. */
const PROPERTY_TIMEOUT_MS = 60_000;

describe('sluice_near_limit_total', () => {
  it('counts admitted decisions with at most a fifth of the limit left, per policy', async () => {
    const { limiter, metrics } = tenPerMinute();
    // remaining after check k is 10 - k: near from k = 8 (2 left); the 11th is denied, not near.
    for (let k = 1; k <= 11; k++) await limiter.check({ identity: 'a' });
    const s = samplesOf(metrics.render());
    expect(s.get('sluice_near_limit_total{policy="ten"}')).toBe(3);
    expect(s.get('sluice_decisions_total{policy="ten",outcome="over_limit"}')).toBe(1);
  });
});

describe('store calls and errors by cause', () => {
  it('counts calls, errors, timeouts and breaker rejections, and the breaker gauge', async () => {
    const clock = { nowMs: T0 };
    const store = new SwitchableStore(() => clock.nowMs);
    const limiter = createLimiter({
      policies: [{ name: 'p', limit: 100, window: '1m', failMode: 'open' }],
      store,
      clock: () => clock.nowMs,
      timeoutMs: 20,
      breaker: { failureThreshold: 3, cooldownMs: 1000 },
      denyCache: false,
    });
    const metrics = createMetrics({ meter: false, limiter });
    await limiter.check({ identity: 'a' });
    store.behaviour = 'error';
    await limiter.check({ identity: 'a' });
    await limiter.check({ identity: 'a' });
    store.behaviour = 'hang';
    await limiter.check({ identity: 'a' });
    // Three failures in a row: the breaker is open; the next two never reach the store.
    await limiter.check({ identity: 'a' });
    await limiter.check({ identity: 'a' });
    const s = samplesOf(metrics.render());
    expect(s.get('sluice_store_calls_total')).toBe(6);
    expect(s.get('sluice_store_errors_total{cause="error"}')).toBe(2);
    expect(s.get('sluice_store_errors_total{cause="timeout"}')).toBe(1);
    expect(s.get('sluice_store_errors_total{cause="breaker_open"}')).toBe(2);
    expect(s.get('sluice_store_errors_total{cause="noscript_reload"}')).toBe(0);
    expect(s.get('sluice_breaker_open')).toBe(1);
    expect(s.get('sluice_store_timeout_seconds')).toBe(0.02);
    // Timed: the four calls that reached the store, not the two the breaker answered.
    expect(s.get('sluice_store_duration_seconds_count')).toBe(4);
    expect(s.get('sluice_store_duration_seconds_bucket{le="0.0005"}')).toBeLessThanOrEqual(3);
    expect(s.get('sluice_store_duration_seconds_bucket{le="+Inf"}')).toBe(4);
    expect(s.get('sluice_decisions_total{policy="p",outcome="fail_open"}')).toBe(5);
    // Back up after the cool-down: a probe closes the breaker.
    store.behaviour = 'up';
    clock.nowMs += 1000;
    await limiter.check({ identity: 'a' });
    expect(samplesOf(metrics.render()).get('sluice_breaker_open')).toBe(0);
  });

  it('does not time an in-process store, and has no script series without scripts', async () => {
    const limiter = createLimiter({ policies: [{ name: 'p', limit: 5, window: '1m' }] });
    const metrics = createMetrics({ meter: false, limiter });
    await limiter.check({ identity: 'a' });
    const text = metrics.render();
    const s = samplesOf(text);
    expect(s.get('sluice_store_calls_total')).toBe(1);
    expect(s.get('sluice_store_duration_seconds_count')).toBe(0);
    expect(text).not.toContain('sluice_script_calls_total');
  });
});

describe('remembered denials and lease units', () => {
  it('counts denials the deny cache remembers', async () => {
    const clock = () => T0;
    const limiter = createLimiter({
      policies: [{ name: 'one', algorithm: 'fixed-window', limit: 1, window: '1m' }],
      store: new SwitchableStore(clock),
      clock,
    });
    const metrics = createMetrics({ meter: false, limiter });
    for (let i = 0; i < 4; i++) await limiter.check({ identity: 'a' });
    const s = samplesOf(metrics.render());
    // The second check is the store's denial (remembered); the next two come from the cache.
    expect(s.get('sluice_remembered_denials_total{source="deny-cache"}')).toBe(1);
    expect(s.get('sluice_in_process_decisions_total{source="deny-cache"}')).toBe(2);
    expect(s.get('sluice_remembered_denials_total{source="lease"}')).toBe(0);
  });

  it('counts lease units taken, spent and dropped, and a denied take remembered', async () => {
    const clock = { nowMs: T0 };
    const store = new SwitchableStore(() => clock.nowMs);
    const limiter = createLimiter({
      policies: [
        {
          name: 'leased',
          algorithm: 'token-bucket',
          burst: 20,
          rate: '1/s',
          lease: { units: 5, ttlMs: 1000 },
        },
      ],
      store,
      clock: () => clock.nowMs,
      denyCache: false,
    });
    const metrics = createMetrics({ meter: false, limiter });
    // The first check of a cold key is exact (no lease); then seven admitted from leases.
    for (let i = 0; i < 8; i++) await limiter.check({ identity: 'a' });
    let s = samplesOf(metrics.render());
    // Two takes of 5; seven units spent, three held.
    expect(s.get('sluice_lease_units_taken_total')).toBe(10);
    expect(s.get('sluice_lease_units_spent_total')).toBe(7);
    expect(s.get('sluice_lease_units_dropped_total')).toBe(0);
    // The lease expires with 3 units in it; the next take drops them.
    clock.nowMs += 1500;
    await limiter.check({ identity: 'a' }); // 1.5 s after its last check the key is cold: exact
    await limiter.check({ identity: 'a' });
    s = samplesOf(metrics.render());
    expect(s.get('sluice_lease_units_dropped_total')).toBe(3);
    expect(s.get('sluice_lease_units_spent_total')).toBe(8);
    // Drain the global budget: a take the store denies is remembered.
    for (let i = 0; i < 40; i++) await limiter.check({ identity: 'a' });
    s = samplesOf(metrics.render());
    expect(s.get('sluice_remembered_denials_total{source="lease"}')).toBeGreaterThanOrEqual(1);
    const taken = s.get('sluice_lease_units_taken_total') as number;
    const spent = s.get('sluice_lease_units_spent_total') as number;
    const dropped = s.get('sluice_lease_units_dropped_total') as number;
    // Every unit taken was spent, dropped, or is still held (at most one lease of 5).
    expect(taken - spent - dropped).toBeGreaterThanOrEqual(0);
    expect(taken - spent - dropped).toBeLessThanOrEqual(5);
    // Admitted decisions equal the units spent (cost 1 each), and the two checks made exactly.
    expect(s.get('sluice_decisions_total{policy="leased",outcome="allowed"}')).toBe(spent + 2);
  });
});

describe('lease units (property)', () => {
  it(
    'every unit taken is spent, dropped or still held; units spent are the admitted costs',
    async () => {
      const step = fc.record({
        identity: fc.constantFrom('a', 'b', 'c'),
        dtMs: fc.integer({ min: 0, max: 700 }),
        cost: fc.integer({ min: 1, max: 3 }),
        reset: fc.boolean(),
      });
      await fc.assert(
        fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 80 }), async (steps) => {
          const clock = { nowMs: T0 };
          const limiter = createLimiter({
            policies: [
              {
                name: 'leased',
                algorithm: 'token-bucket',
                burst: 20,
                rate: '5/s',
                lease: { units: 6, ttlMs: 500 },
              },
            ],
            store: new SwitchableStore(() => clock.nowMs),
            clock: () => clock.nowMs,
            denyCache: false,
          });
          let admittedUnits = 0;
          // When each identity was last checked since its last reset: a check more than the lease's
          // TTL (500 ms) after it, or the first, is a cold key's, decided exactly (no lease spent).
          const checkedAtMs = new Map<string, number>();
          for (const { identity, dtMs, cost, reset } of steps) {
            clock.nowMs += dtMs;
            if (reset && dtMs > 600) {
              await limiter.reset(identity);
              checkedAtMs.delete(identity);
            }
            const last = checkedAtMs.get(identity);
            const exact = last === undefined || clock.nowMs - last > 500;
            checkedAtMs.set(identity, clock.nowMs);
            if ((await limiter.check({ identity, cost })).allowed && !exact) admittedUnits += cost;
          }
          const { taken, spent, dropped } = limiter.counters.leases;
          expect(spent).toBe(admittedUnits);
          // Held: at most one lease of 6 per identity.
          expect(taken - spent - dropped).toBeGreaterThanOrEqual(0);
          expect(taken - spent - dropped).toBeLessThanOrEqual(3 * 6);
        }),
        { numRuns: 80 },
      );
    },
    PROPERTY_TIMEOUT_MS,
  );
});

describe('script calls against a real redis-server', () => {
  const redis = useRedis();
  /**
   * A deadline the first call meets on a loaded machine (a new connection, EVALSHA, NOSCRIPT,
   * EVAL): at the default 100 ms it timed out, failed closed and opened the breaker. These tests
   * count calls, not deadlines.
   */
  const timeoutMs = 10_000;

  it('counts decide-script calls, the decisions they carry and NOSCRIPT reloads', async () => {
    const limiter = createLimiter({
      policies: [{ name: 'p', limit: 100, window: '1m' }],
      // A generous batch wait: a slow first pass over eight checks must not split the batch.
      store: new RedisStore({ client: redis.client, maxBatchWaitMs: 10_000 }),
      prefix: 'metrics-script',
      timeoutMs,
    });
    const metrics = createMetrics({ meter: false, limiter });
    // Eight checks issued together share one call.
    await Promise.all(Array.from({ length: 8 }, (_, i) => limiter.check({ identity: `id${i}` })));
    await redis.admin.script('FLUSH');
    await limiter.check({ identity: 'after-flush' });
    const s = samplesOf(metrics.render());
    expect(s.get('sluice_script_calls_total')).toBe(2);
    expect(s.get('sluice_script_decisions_total')).toBe(9);
    // The first EVALSHA ever sent and the one after the flush both found no script.
    expect(s.get('sluice_store_errors_total{cause="noscript_reload"}')).toBe(2);
    expect(s.get('sluice_store_calls_total')).toBe(9);
    expect(s.get('sluice_store_duration_seconds_count')).toBe(9);
    expect(metrics.render()).not.toMatch(/id\d|after-flush|metrics-script/);
  });

  it('times store calls only once metrics are attached', async () => {
    const limiter = createLimiter({
      policies: [{ name: 'p', limit: 100, window: '1m' }],
      store: new RedisStore({ client: redis.client }),
      prefix: 'metrics-timed',
      timeoutMs,
    });
    await limiter.check({ identity: 'a' });
    expect(limiter.counters.store.calls).toBe(1);
    expect(limiter.counters.store.durations.count).toBe(0);
    const metrics = createMetrics({ meter: false, limiter });
    await limiter.check({ identity: 'a' });
    const s = samplesOf(metrics.render());
    expect(s.get('sluice_store_calls_total')).toBe(2);
    expect(s.get('sluice_store_duration_seconds_count')).toBe(1);
  });
});
