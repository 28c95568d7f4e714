/**
 * The local stage decides every cost (one above its burst is denied there, as the store denies a
 * cost above its capacity), and the wait it tells is never shorter than the store's: a client
 * that waits its Retry-After is not turned away by the store next.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { PolicyInput } from '../types.js';
import type { Limiter } from './create-limiter.js';
import { leaseFleet } from './lease-fleet.test-support.js';

const STAGED: PolicyInput = {
  name: 'api',
  algorithm: 'fixed-window',
  limit: 1000,
  window: '1m',
  local: { burst: 5, rate: '1/s' },
};

describe('the local stage decides every cost', () => {
  it('denies a cost above its burst in-process, for good, as the store denies one above its limit', async () => {
    const { limiters, takes } = leaseFleet([STAGED], 1);
    const decision = await limiters[0]!.check({ identity: 't', cost: 6 });
    // Never (a wait of 0), nothing charged, the store not asked.
    expect([decision.allowed, decision.source, decision.retryAfterMs, takes()]).toEqual([
      false,
      'local-stage',
      0,
      0,
    ]);
  });

  it('lets at most burst + rate x T units reach the store, whatever the costs', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({ cost: fc.integer({ min: 1, max: 12 }), dtMs: fc.integer({ min: 0, max: 400 }) }),
          {
            minLength: 1,
            maxLength: 200,
          },
        ),
        async (requests) => {
          const { clock, store, limiters } = leaseFleet([STAGED], 1);
          const t0 = clock.nowMs;
          for (const { cost, dtMs } of requests) {
            clock.nowMs += dtMs;
            await limiters[0]!.check({ identity: 't', cost });
          }
          const charging = store.calls.filter((call) => call.mode === 'consume');
          const units = charging.reduce((sum, call) => sum + (call.entries[0]?.cost ?? 0), 0);
          // burst 5, 1/s
          expect(units).toBeLessThanOrEqual(5 + (clock.nowMs - t0) / 1000 + 1e-9);
          // Reads of the store for the waits it tells: after each request it let through, and
          // about once per maxAgeMs (1 s) besides.
          const reads = store.calls.length - charging.length;
          expect(reads).toBeLessThanOrEqual(charging.length + 1 + (clock.nowMs - t0) / 1000);
        },
      ),
      { numRuns: 100 },
    );
  });
});

/** The next check is turned away by the local stage, told `waitMs`; waiting exactly that, it is admitted. */
async function expectToldAndAdmitted(
  limiter: Limiter,
  clock: { nowMs: number },
  waitMs: number,
): Promise<void> {
  const local = await limiter.check({ identity: 't' });
  expect(local).toMatchObject({ allowed: false, source: 'local-stage', retryAfterMs: waitMs });
  clock.nowMs += local.retryAfterMs;
  expect((await limiter.check({ identity: 't' })).allowed).toBe(true);
}

describe('the wait a local-stage denial tells', () => {
  it('is the store wait it last saw when that is longer than its own (the 27 s after a 1 s)', async () => {
    const policy: PolicyInput = { ...STAGED, limit: 3, window: '30s', local: { burst: 5, rate: '1/s' } };
    const { clock, limiters } = leaseFleet([policy], 1, { denyCache: false });
    const limiter = limiters[0]!;
    for (let i = 0; i < 3; i++) expect((await limiter.check({ identity: 't' })).allowed).toBe(true);
    clock.nowMs += 3000;
    expect(await limiter.check({ identity: 't' })).toMatchObject({ source: 'store', retryAfterMs: 27_000 });
    // Hammering: the bucket runs dry.
    for (let i = 0; i < 5; i++) await limiter.check({ identity: 't' });
    await expectToldAndAdmitted(limiter, clock, 27_000);
  });

  it('counts the store wait of every policy of the check, the unstaged ones too', async () => {
    const perUser: PolicyInput = { name: 'per-user', algorithm: 'fixed-window', limit: 1, window: '1m' };
    const { clock, limiters } = leaseFleet([STAGED, perUser], 1);
    const limiter = limiters[0]!;
    expect((await limiter.check({ identity: 't' })).allowed).toBe(true);
    expect(await limiter.check({ identity: 't' })).toMatchObject({
      policy: 'per-user',
      retryAfterMs: 60_000,
    });
    for (let i = 0; i < 3; i++) await limiter.check({ identity: 't' });
    await expectToldAndAdmitted(limiter, clock, 60_000);
  });

  it('makes a denial below wait for the bucket the denied request was charged to', async () => {
    const policy: PolicyInput = { ...STAGED, limit: 4, window: 1000, local: { burst: 5, rate: '1/2s' } };
    const { clock, limiters } = leaseFleet([policy], 1, { denyCache: false });
    const limiter = limiters[0]!;
    for (let i = 0; i < 4; i++) await limiter.check({ identity: 't' });
    // 100 ms later the store's window ends in 900 ms; the bucket, charged for this request too,
    // holds 0.05 units and earns one every 2 s: 1900 ms.
    clock.nowMs += 100;
    const denied = await limiter.check({ identity: 't' });
    expect(denied).toMatchObject({ allowed: false, source: 'store', retryAfterMs: 1900 });
    clock.nowMs += denied.retryAfterMs;
    expect((await limiter.check({ identity: 't' })).allowed).toBe(true);
  });
});

describe('what the local stage knows of the store', () => {
  // A slow stage: what it saw of the store when it last let a request through is older than
  // maxAgeMs (1 s) by the time it turns the next one away.
  const slow: PolicyInput = { ...STAGED, limit: 1, window: '1m', local: { burst: 1, rate: '1/5s' } };

  it('reads the store (a peek, nothing charged) when what it saw is older than maxAgeMs', async () => {
    const { clock, store, limiters } = leaseFleet([slow], 1);
    const limiter = limiters[0]!;
    expect((await limiter.check({ identity: 't' })).allowed).toBe(true);
    clock.nowMs += 2000;
    // The bucket would say 3 s; the store, read now, says the window ends in 58 s.
    await expectToldAndAdmitted(limiter, clock, 58_000);
    expect(store.calls.map((c) => c.mode)).toEqual(['consume', 'peek', 'consume']);
  });

  it('makes one read per key for the denials made while it is under way, and none within maxAgeMs', async () => {
    const { clock, store, limiters } = leaseFleet([slow], 1);
    const limiter = limiters[0]!;
    await limiter.check({ identity: 't' });
    clock.nowMs += 2000;
    const denials = await Promise.all(Array.from({ length: 50 }, () => limiter.check({ identity: 't' })));
    expect(new Set(denials.map((d) => `${d.source} ${d.retryAfterMs}`))).toEqual(
      new Set(['local-stage 58000']),
    );
    clock.nowMs += 999;
    expect(await limiter.check({ identity: 't' })).toMatchObject({
      source: 'local-stage',
      retryAfterMs: 57_001,
    });
    expect(store.calls.map((c) => c.mode)).toEqual(['consume', 'peek']);
  });
});
