/**
 * Leases under concurrent checks: waves of checks at once, on several instances, take leases side
 * by side (a check the take in flight does not pay takes another). The bounds of docs/leases.md
 * hold whatever the waves: never more admitted than burst + rate x T from a fresh key nor
 * burst + rate x (T + ttl) in any interval, and what the leased policy is charged beyond what it
 * admitted is at most one lease per instance.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { PolicyInput } from '../types.js';
import type { Limiter } from './create-limiter.js';
import {
  expectLeaseBounds,
  FLEET_PROPERTY_TIMEOUT_MS,
  LEASED,
  leaseFleet,
} from './lease-fleet.test-support.js';

/** A wave: `size` checks at once on one instance, `dtMs` after the wave before. */
const wave = fc.record({
  instance: fc.integer({ min: 0, max: 3 }),
  dtMs: fc.integer({ min: 0, max: 250 }),
  size: fc.integer({ min: 1, max: 30 }),
});

/** Sends the waves; returns the clock at each admission, in order. */
async function admissions(
  limiters: readonly Limiter[],
  clock: { nowMs: number },
  waves: readonly { instance: number; dtMs: number; size: number }[],
): Promise<number[]> {
  const admittedAt: number[] = [];
  for (const { instance, dtMs, size } of waves) {
    clock.nowMs += dtMs;
    const limiter = limiters[instance] as Limiter;
    const decisions = await Promise.all(
      Array.from({ length: size }, () => limiter.check({ identity: 'tenant' })),
    );
    for (const d of decisions) if (d.allowed) admittedAt.push(clock.nowMs);
  }
  return admittedAt;
}

describe('leases under concurrent checks', () => {
  it(
    'never admit more than burst + rate x T from a fresh key, nor burst + rate x (T + ttl) in any interval (fast-check)',
    async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(wave, { minLength: 1, maxLength: 40 }), async (waves) => {
          const { clock, limiters } = leaseFleet([LEASED], 4);
          const admittedAt = await admissions(limiters, clock, waves);
          // 10/s: one unit per 100 ms; a lease lives 1000 ms.
          expectLeaseBounds(admittedAt, { burst: 20, intervalMs: 100, ttlMs: 1000 });
        }),
        { numRuns: 60 },
      );
    },
    FLEET_PROPERTY_TIMEOUT_MS,
  );

  it(
    'charge the leased policy at most what was admitted plus one lease per instance (no refill, fast-check)',
    async () => {
      const budget: PolicyInput = { ...LEASED, burst: 60, rate: '1/h' };
      await fc.assert(
        fc.asyncProperty(fc.array(wave, { minLength: 1, maxLength: 30 }), async (waves) => {
          const { clock, limiters, store } = leaseFleet([budget], 4);
          const admitted = (await admissions(limiters, clock, waves)).length;
          const key = store.calls[0]?.entries[0]?.key;
          if (key === undefined) return;
          const [state] = await store.inner.decide(
            [{ key, policy: (limiters[0] as Limiter).policy('leased'), cost: 1 }],
            'peek',
          );
          const charged = 60 - Math.floor((state?.remaining as number) + 1e-9);
          expect(admitted).toBeLessThanOrEqual(60);
          expect(charged).toBeGreaterThanOrEqual(admitted);
          expect(charged).toBeLessThanOrEqual(admitted + 4 * 5);
        }),
        { numRuns: 60 },
      );
    },
    FLEET_PROPERTY_TIMEOUT_MS,
  );

  it('a hot key takes side by side once its budget is known: 60 checks at once after a first take make 12 takes, none waiting on another', async () => {
    const { limiters, store } = leaseFleet([{ ...LEASED, burst: 1000 }], 1);
    const limiter = limiters[0] as Limiter;
    await limiter.check({ identity: 'tenant' });
    for (let i = 0; i < 4; i++) await limiter.check({ identity: 'tenant' });
    const before = store.calls.length;
    const pending = Promise.all(Array.from({ length: 60 }, () => limiter.check({ identity: 'tenant' })));
    // Every take is in the store's hands before the first answers: no check queued behind another.
    expect(store.calls.length - before).toBe(12);
    const decisions = await pending;
    expect(decisions.every((d) => d.allowed)).toBe(true);
    // Each take of 5 pays its own check and 4 waiting ones: 12 takes, all sent at once.
    const sent = store.calls.slice(before);
    expect(sent.map((c) => c.entries[0]?.cost)).toEqual(Array.from({ length: 12 }, () => 5));
    expect(decisions.filter((d) => d.source === 'lease')).toHaveLength(48);
  });
});
