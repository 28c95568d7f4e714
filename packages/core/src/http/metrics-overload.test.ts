/**
 * The overload metrics: concurrency slots in use (a gauge), reclaimed and lost, waiting checks (a
 * gauge), waits admitted and cancelled, by policy name only; none rendered before any slot or wait.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLimiter } from '../limiter/create-limiter.js';
import { MemoryStore } from '../stores/memory-store.js';
import { createMetrics } from './metrics.js';
import { samplesOf } from './metrics.test-support.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('overload metrics', () => {
  it('render slots in use, reclaimed and lost, and waits, by policy', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    let now = 1_764_400_200_000;
    const clock = () => now;
    const store = new MemoryStore({ clock });
    const policies = [
      { name: 'in-flight', algorithm: 'concurrency' as const, limit: 2, leaseMs: 1000 },
      { name: 'queued', algorithm: 'token-bucket' as const, burst: 1, rate: '10/s', maxWaitMs: 1000 },
    ];
    const limiter = createLimiter({ policies, store, clock, denyCache: false });
    const other = createLimiter({ policies, store, clock, denyCache: false });
    const metrics = createMetrics({ meter: false, limiter });
    expect(metrics.render()).not.toContain('sluice_concurrency_slots');

    const held = await limiter.check({ identity: 'a', policies: ['in-flight'] });
    await limiter.check({ identity: 'b', policies: ['in-flight'] });
    // `other` dies holding a slot of `a`; once its lease ran out, a check of `a` takes it back.
    await other.check({ identity: 'a', policies: ['in-flight'] });
    vi.clearAllTimers();
    now += 1001;
    await limiter.release(held);
    await limiter.check({ identity: 'a', policies: ['in-flight'] });
    expect((await limiter.check({ identity: 'q', policies: ['queued'] })).allowed).toBe(true);
    const waiting = limiter.check({ identity: 'q', policies: ['queued'] });
    await vi.advanceTimersByTimeAsync(0);

    const s = samplesOf(metrics.render());
    expect(s.get('sluice_concurrency_slots_in_use{policy="in-flight"}')).toBe(2);
    expect(s.get('sluice_concurrency_slots_reclaimed_total{policy="in-flight"}')).toBe(1);
    expect(s.get('sluice_waiting_requests{policy="queued"}')).toBe(1);
    now += 100;
    await vi.advanceTimersByTimeAsync(100);
    expect((await waiting).allowed).toBe(true);
    const after = samplesOf(metrics.render());
    expect(after.get('sluice_waiting_requests{policy="queued"}')).toBe(0);
    expect(after.get('sluice_waits_admitted_total{policy="queued"}')).toBe(1);
    expect(metrics.render()).toMatch(/# TYPE sluice_concurrency_slots_in_use gauge/);
  });
});
