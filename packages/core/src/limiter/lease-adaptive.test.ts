/**
 * Adaptive leases (`lease.adaptive`): the size a take asks for follows the key's use. A hot key
 * grows to whole leases, cold keys strand almost nothing, a lease expiring unspent halves the next,
 * a denial starts again small, and the fleet bounds hold as for fixed leases.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { PolicyInput } from '../types.js';
import type { Limiter } from './create-limiter.js';
import { FLEET_PROPERTY_TIMEOUT_MS, leaseFleet, T0 } from './lease-fleet.test-support.js';

/** One policy's fleet; `asked()` lists the units each store call asked for (a take's `cost`). */
function fleet(policy: PolicyInput, instances: number) {
  const { clock, store, limiters } = leaseFleet([policy], instances);
  const asked = () => store.calls.filter((c) => c.mode === 'consume').map((c) => c.entries[0]?.cost);
  return { clock, limiters, asked };
}

const HOT: PolicyInput = {
  name: 'hot',
  algorithm: 'token-bucket',
  burst: 1_000_000,
  rate: '1000000/s',
  lease: { units: 100, ttlMs: 1000, adaptive: true },
};

const sum = (xs: readonly (number | undefined)[]) => xs.reduce<number>((a, x) => a + (x ?? 0), 0);

describe('adaptive leases', () => {
  it('a hot key doubles its lease while it spends it fast: 1, 2, 4 ... 64, then 100; 1,000 admissions in 16 takes', async () => {
    const { clock, limiters, asked } = fleet(HOT, 1);
    for (let i = 0; i < 1000; i++) {
      clock.nowMs += 1;
      expect((await (limiters[0] as Limiter).check({ identity: 'tenant' })).allowed).toBe(true);
    }
    // The key's first check is exact (cost 1, a cold key takes no lease), then the takes.
    expect(asked().slice(0, 10)).toEqual([1, 1, 2, 4, 8, 16, 32, 64, 100, 100]);
    // A fixed lease of 100 takes 10 times; the ramp costs log2(100) = 7 takes more at most.
    expect(asked()).toHaveLength(1 + 16);
  });

  it('grows from a take made at clock 0 too (a lease taken before is known by its count, not its time)', async () => {
    const { clock, limiters, asked } = fleet(HOT, 1);
    clock.nowMs = 0;
    for (let i = 0; i < 5; i++) {
      await (limiters[0] as Limiter).check({ identity: 'tenant' });
      clock.nowMs += 1;
    }
    // The first check is exact (a cold key), then takes of 1, 2, 4.
    expect(asked()).toEqual([1, 1, 2, 4]);
  });

  it('cold keys strand almost nothing: 500 identities seen once each take 1 unit each (a fixed lease of 100 strands 99 each)', async () => {
    const adaptive = fleet(HOT, 1);
    const fixed = fleet({ ...HOT, lease: { units: 100, ttlMs: 1000 } }, 1);
    for (const { clock, limiters } of [adaptive, fixed]) {
      for (let i = 0; i < 500; i++) {
        clock.nowMs += 1;
        expect((await (limiters[0] as Limiter).check({ identity: `cold-${i}` })).allowed).toBe(true);
      }
    }
    // Taken from the store but not spent: units asked for (all granted from this budget) - 500 admitted.
    // A key seen once is checked exactly, adaptive or not: nothing is stranded.
    expect(sum(adaptive.asked()) - 500).toBe(0);
    expect(sum(fixed.asked()) - 500).toBe(0);
  });

  it('halves the next lease when one expired unspent, down to 1', async () => {
    const { clock, limiters, asked } = fleet(HOT, 1);
    const limiter = limiters[0] as Limiter;
    for (let i = 0; i < 300; i++) {
      clock.nowMs += 1;
      await limiter.check({ identity: 'tenant' });
    }
    const grown = asked().length;
    expect(asked()[grown - 1]).toBe(100);
    for (let i = 0; i < 8; i++) {
      clock.nowMs += 1100; // each lease expires with all but one unit unspent
      // A check 1.1 s after the last is a cold key's: exact (cost 1); the next, 1 ms on, takes.
      expect((await limiter.check({ identity: 'tenant' })).allowed).toBe(true);
      clock.nowMs += 1;
      expect((await limiter.check({ identity: 'tenant' })).allowed).toBe(true);
    }
    const takes = asked()
      .slice(grown)
      .filter((_units, i) => i % 2 === 1);
    expect(takes).toEqual([50, 25, 12, 6, 3, 1, 1, 1]);
  });

  it('keeps its size when a lease is spent, but slowly (after half its TTL)', async () => {
    const { clock, limiters, asked } = fleet(HOT, 1);
    const limiter = limiters[0] as Limiter;
    for (let i = 0; i < 5; i++) {
      clock.nowMs += 1;
      await limiter.check({ identity: 'tenant' }); // exact, takes of 1, 2, then a lease of 4 with 3 left
    }
    expect(asked()).toEqual([1, 1, 2, 4]);
    for (let i = 0; i < 3; i++) {
      clock.nowMs += 200; // the lease of 4 is spent 601 ms after its take
      await limiter.check({ identity: 'tenant' });
    }
    clock.nowMs += 10;
    await limiter.check({ identity: 'tenant' });
    expect(asked()).toEqual([1, 1, 2, 4, 4]);
  });

  it('starts again at 1 after a denied take', async () => {
    const { clock, limiters, asked } = fleet(
      {
        name: 'tight',
        algorithm: 'token-bucket',
        burst: 20,
        rate: '1/s',
        lease: { units: 16, ttlMs: 1000, adaptive: true },
      },
      1,
    );
    const limiter = limiters[0] as Limiter;
    const allowed: boolean[] = [];
    for (let i = 0; i < 22; i++) {
      clock.nowMs += 1;
      allowed.push((await limiter.check({ identity: 'tenant' })).allowed);
    }
    // 1 exact + 1 + 2 + 4 + 8 = 16, then 4 of the 16 asked for (the budget's last units), then denied.
    expect(allowed.filter(Boolean)).toHaveLength(20);
    expect(asked().slice(0, 7)).toEqual([1, 1, 2, 4, 8, 16, 16]);
    clock.nowMs += 2000; // 2 units refilled; the wait of the denial is over
    // 2 s after its last check the key is cold again (exact); the next check takes, from 1 again.
    expect((await limiter.check({ identity: 'tenant' })).allowed).toBe(true);
    expect((await limiter.check({ identity: 'tenant' })).allowed).toBe(true);
    expect(asked().slice(-2)).toEqual([1, 1]);
  });

  it(
    'never admits more than burst + rate x T from a fresh key, 4 instances (fast-check)',
    async () => {
      const step = fc.record({
        instance: fc.integer({ min: 0, max: 3 }),
        dtMs: fc.integer({ min: 0, max: 250 }),
      });
      const policy: PolicyInput = {
        name: 'leased',
        algorithm: 'token-bucket',
        burst: 20,
        rate: '10/s',
        lease: { units: 5, ttlMs: 1000, adaptive: true },
      };
      await fc.assert(
        fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 200 }), async (steps) => {
          const { clock, limiters } = fleet(policy, 4);
          let admitted = 0;
          for (const { instance, dtMs } of steps) {
            clock.nowMs += dtMs;
            if ((await (limiters[instance] as Limiter).check({ identity: 'tenant' })).allowed) {
              admitted += 1;
              expect(admitted).toBeLessThanOrEqual(20 + (clock.nowMs - T0) / 100 + 1e-9);
            }
          }
        }),
        { numRuns: 60 },
      );
    },
    FLEET_PROPERTY_TIMEOUT_MS,
  );
});
