/**
 * The one rule of every in-process memory of a denial: kept until the earlier of its wait and
 * `maxAgeMs`, forgotten by a reset here; so a reset made on another instance is seen within
 * `maxAgeMs` whether the denial was remembered by the deny cache, a lease or the local stage.
 */
import { describe, expect, it } from 'vitest';
import { countMapIterations } from '../stores/map-iterations.test-support.js';
import type { PolicyInput } from '../types.js';
import { DenialMemory, rememberedUntilMs } from './denial-memory.js';
import { leaseFleet, T0 } from './lease-fleet.test-support.js';
import { LeaseTable } from './lease-table.js';

/** The store's verdict of a denial with a wait of `ms`. */
const deniedFor = (ms: number) => ({ allowed: false, remaining: 0, resetMs: ms, retryAfterMs: ms });

describe('DenialMemory', () => {
  it('keeps a denial until the earlier of its wait and maxAgeMs, for as many units or more', () => {
    const memory = new DenialMemory(10, 1000);
    memory.remember('long', 2, T0, T0 + 720_000, deniedFor(720_000));
    memory.remember('short', 1, T0, T0 + 400, deniedFor(400));
    expect(memory.lookup('long', 2, T0 + 999)).toMatchObject({
      untilMs: T0 + 720_000,
      expiresAtMs: T0 + 1000,
    });
    expect(memory.lookup('long', 3, T0 + 999)).toBeDefined();
    // Fewer units might fit: not a denial this memory is sure of.
    expect(memory.lookup('long', 1, T0 + 999)).toBeUndefined();
    expect(memory.lookup('long', 2, T0 + 1000)).toBeUndefined();
    expect(memory.lookup('short', 1, T0 + 399)).toBeDefined();
    expect(memory.lookup('short', 1, T0 + 400)).toBeUndefined();
    expect(memory.size).toBe(0);
    expect(rememberedUntilMs(T0, T0 + 5, 1000)).toBe(T0 + 5);
  });

  it('answers only a denial the store gave from lookup; a bound on a wait (the local stage) only from waitFor', () => {
    const memory = new DenialMemory(10, 1000);
    memory.rememberVerdict('k', 1, T0, { allowed: true, remaining: 2, resetMs: 500, retryAfterMs: 0 });
    expect(memory.lookup('k', 3, T0 + 1)).toBeUndefined();
    expect(memory.waitFor('k', 3, T0 + 1)).toMatchObject({ untilMs: T0 + 500, certain: false });
    expect(memory.waitFor('k', 2, T0 + 1)).toBeUndefined();
    memory.remember('k', 3, T0 + 2, T0 + 400, deniedFor(400));
    expect(memory.lookup('k', 3, T0 + 3)).toMatchObject({ untilMs: T0 + 400, certain: true });
    memory.rememberVerdict('k', 1, T0 + 4, { allowed: true, remaining: 5, resetMs: 0, retryAfterMs: 0 });
    expect([memory.knows('k', T0 + 5), memory.waitFor('k', 100, T0 + 5)]).toEqual([true, undefined]);
  });

  it('evicts without iterating a Map, and so does the lease table (the same work per key however many came and went)', () => {
    const memory = new DenialMemory(1000, 60_000);
    const leases = new LeaseTable(1000);
    const iterations = countMapIterations(() => {
      for (let i = 0; i < 5000; i++) {
        memory.remember(`k${i}`, 1, T0, T0 + 30_000, deniedFor(30_000));
        leases.hold(`k${i}`);
      }
    });
    expect(iterations).toBe(0);
    expect(memory.size).toBe(1000);
    // The oldest went first: the last 1000 are held.
    expect([memory.lookup('k3999', 1, T0 + 1), memory.lookup('k4000', 1, T0 + 1)]).toMatchObject([
      undefined,
      { untilMs: T0 + 30_000 },
    ]);
    expect([leases.get('k3999'), leases.get('k4000')?.units]).toEqual([undefined, 0]);
  });

  it('forgets a key at a reset, every key when the clock goes back, and the oldest beyond maxKeys', () => {
    const memory = new DenialMemory(2, 1000);
    memory.remember('a', 1, T0, T0 + 5000, deniedFor(5000));
    memory.remember('b', 1, T0, T0 + 5000, deniedFor(5000));
    memory.forget(['a', 'nope']);
    expect(memory.lookup('a', 1, T0 + 1)).toBeUndefined();
    expect(memory.lookup('b', 1, T0 - 1)).toBeUndefined();
    memory.remember('a', 1, T0, T0 + 5000, deniedFor(5000));
    memory.remember('b', 1, T0, T0 + 5000, deniedFor(5000));
    memory.remember('c', 1, T0, T0 + 5000, deniedFor(5000));
    expect(['a', 'b', 'c'].map((k) => memory.lookup(k, 1, T0 + 1) !== undefined)).toEqual([
      false,
      true,
      true,
    ]);
    // A denial already over is not kept.
    memory.remember('d', 1, T0, T0 + 0, deniedFor(0));
    expect(memory.lookup('d', 1, T0)).toBeUndefined();
  });
});

/** The policies of the table: a wait of `windowMs` after one admission, remembered by each memory. */
const MEMORIES: [string, (windowMs: number) => PolicyInput, { denyCache: boolean }][] = [
  [
    'the deny cache',
    (w) => ({ name: 'p', algorithm: 'fixed-window', limit: 1, window: w }),
    { denyCache: true },
  ],
  [
    'a lease, with the deny cache',
    (w) => ({ name: 'p', algorithm: 'fixed-window', limit: 1, window: w, lease: { units: 1, ttlMs: 1000 } }),
    { denyCache: true },
  ],
  [
    'a lease alone',
    (w) => ({ name: 'p', algorithm: 'fixed-window', limit: 1, window: w, lease: { units: 1, ttlMs: 1000 } }),
    { denyCache: false },
  ],
  [
    'the local stage',
    (w) => ({ name: 'p', algorithm: 'fixed-window', limit: 1, window: w, local: { burst: 2, rate: '2/s' } }),
    { denyCache: true },
  ],
];

describe.each(MEMORIES)('a reset on another instance reaches %s within maxAgeMs', (_, policyOf, options) => {
  it.each([4000, 720_000, 2_255_000])('a wait of %i ms', async (windowMs) => {
    const { clock, limiters, takes } = leaseFleet([policyOf(windowMs)], 2, options);
    const [a, b] = limiters as [(typeof limiters)[0], (typeof limiters)[0]];
    expect((await b.check({ identity: 'u' })).allowed).toBe(true);
    expect(await b.check({ identity: 'u' })).toMatchObject({ allowed: false, source: 'store' });
    // Denied in-process from now on, until the store is asked again.
    const calls = takes();
    for (let i = 0; i < 3; i++) {
      clock.nowMs += 300;
      const denied = await b.check({ identity: 'u' });
      expect(denied.allowed).toBe(false);
      expect(denied.source).not.toBe('store');
    }
    expect(takes()).toBe(calls);
    await a.reset('u');
    // 900 ms after the denial: still remembered; at 1000 ms it is not.
    clock.nowMs += 100;
    expect(await b.check({ identity: 'u' })).toMatchObject({ allowed: true });
  });
});
