/**
 * Leases through the limiter: instances sharing one store (a MemoryStore behind a counting switch,
 * an injected clock) never admit more than the policy allows, leave at most instances x units
 * unused, call the store about once per lease, and stay all or nothing with other policies.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../http/metrics.js';
import type { Decision, PolicyInput } from '../types.js';
import { createLimiter, type Limiter } from './create-limiter.js';
import {
  expectLeaseBounds,
  FLEET_PROPERTY_TIMEOUT_MS,
  LEASED,
  leaseFleet,
  T0,
} from './lease-fleet.test-support.js';

/** The shared fleet, as these tests call it. */
const fleet = (policies: PolicyInput[], instances: number, denyCache = true) =>
  leaseFleet(policies, instances, { denyCache });

describe('leases: the bounds', () => {
  it(
    'never admits more than burst + rate x T from a fresh key, nor burst + rate x (T + ttl) in any interval',
    async () => {
      const step = fc.record({
        instance: fc.integer({ min: 0, max: 3 }),
        dtMs: fc.integer({ min: 0, max: 250 }),
      });
      await fc.assert(
        fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 200 }), async (steps) => {
          const { clock, limiters } = fleet([LEASED], 4);
          const admittedAt: number[] = [];
          for (const { instance, dtMs } of steps) {
            clock.nowMs += dtMs;
            const decision = await (limiters[instance] as Limiter).check({ identity: 'tenant' });
            if (decision.allowed) admittedAt.push(clock.nowMs);
          }
          // 10/s: one unit per 100 ms; a lease lives 1000 ms.
          expectLeaseBounds(admittedAt, { burst: 20, intervalMs: 100, ttlMs: 1000 });
        }),
        { numRuns: 60 },
      );
    },
    FLEET_PROPERTY_TIMEOUT_MS,
  );

  it('leaves at most instances x units unused: a burst at one instant admits at least burst - 4 x 5', async () => {
    const { limiters } = fleet([LEASED], 4);
    let admitted = 0;
    for (let i = 0; i < 200; i++) {
      if ((await (limiters[i % 4] as Limiter).check({ identity: 'tenant' })).allowed) admitted += 1;
    }
    expect(admitted).toBeGreaterThanOrEqual(20 - 4 * 5);
    expect(admitted).toBeLessThanOrEqual(20);
  });

  it('calls the store about once per lease: 400 admissions, 4 instances, units 5 -> at most 400/5 + 4 calls', async () => {
    const { limiters, takes } = fleet([{ ...LEASED, burst: 1000, rate: '1000/s' }], 4);
    for (let i = 0; i < 400; i++) {
      expect((await (limiters[i % 4] as Limiter).check({ identity: 'tenant' })).allowed).toBe(true);
    }
    expect(takes()).toBeLessThanOrEqual(400 / 5 + 4);
    expect(takes()).toBeGreaterThanOrEqual(400 / 5);
  });

  it('takes leases side by side: 20 checks at once on one instance make 4 takes of 5, each paying 4 waiting checks', async () => {
    const { limiters, takes } = fleet([{ ...LEASED, burst: 1000 }], 1);
    const limiter = limiters[0] as Limiter;
    const decisions = await Promise.all(
      Array.from({ length: 20 }, () => limiter.check({ identity: 'tenant' })),
    );
    expect(decisions.every((d) => d.allowed)).toBe(true);
    // The key's first check is exact (a cold key takes no lease), then 4 takes of 5.
    expect(takes()).toBe(5);
    expect(decisions.filter((d) => d.source === 'lease')).toHaveLength(15);
  });
});

describe('leases: takes side by side', () => {
  it('a check whose take is denied while another take of its key filled the lease is admitted from it: a denial never says units remain', async () => {
    const { limiters } = fleet([LEASED], 2, false);
    const [a, b] = limiters as [Limiter, Limiter];
    await a.check({ identity: 't' }); // a cold key: checked exactly (19 left)
    await a.check({ identity: 't' }); // takes 5, spends 1 (14 left, as this take saw)
    for (let i = 0; i < 4; i++) await a.check({ identity: 't' }); // the lease spent
    expect((await b.check({ identity: 't', cost: 9 })).allowed).toBe(true); // 5 left
    // Six at once: a take of 5 pays the first five; the sixth takes another beside it, denied.
    const decisions = await Promise.all(Array.from({ length: 6 }, () => a.check({ identity: 't' })));
    expect(decisions.filter((d) => d.allowed)).toHaveLength(5);
    for (const d of decisions.filter((d) => !d.allowed)) expect(d.remaining).toBe(0);
  });
});

describe('leases: the end of the budget', () => {
  it('near the end of the budget a burst is decided in one round: takes beside each other down to the last units, then one probe whose denial answers the rest', async () => {
    const { limiters, store } = fleet([LEASED], 1, false);
    const limiter = limiters[0] as Limiter;
    await limiter.check({ identity: 't' }); // a cold key: checked exactly (19 left)
    await limiter.check({ identity: 't' }); // takes 5, spends 1 (14 left, as this take saw)
    for (let i = 0; i < 4; i++) await limiter.check({ identity: 't' }); // the lease spent
    const before = store.calls.length;
    const pending = Promise.all(Array.from({ length: 20 }, () => limiter.check({ identity: 't' })));
    // Every call is in the store's hands before the first answers: 5 + 5 + the last 4 (asked as 5,
    // down to what is left), then a probe of 1 beyond the 14 as last seen.
    const sent = store.calls.slice(before).map((c) => c.entries[0]?.cost);
    expect(sent).toEqual([5, 5, 5, 1]);
    const decisions = await pending;
    // No second round: the probe's denial answered the checks queued behind it.
    expect(store.calls.length - before).toBe(4);
    expect(decisions.filter((d) => d.allowed)).toHaveLength(14);
    for (const d of decisions.filter((d) => !d.allowed)) expect(d.retryAfterMs).toBeGreaterThan(0);
  });
});

describe('leases: a cold key starts at nothing', () => {
  it('a key takes a lease on its second check within ttlMs; after a reset or a silence of more than ttlMs it is checked exactly again', async () => {
    const { clock, limiters, store } = fleet([LEASED], 1);
    const limiter = limiters[0] as Limiter;
    const tookLease = () => store.calls.map((c) => c.entries[0]?.leastCost !== undefined);
    await limiter.check({ identity: 't' });
    await limiter.check({ identity: 't' });
    expect(tookLease()).toEqual([false, true]);
    await limiter.reset('t');
    await limiter.check({ identity: 't' });
    expect(tookLease()).toEqual([false, true, false]);
    clock.nowMs += 1001;
    await limiter.check({ identity: 't' });
    clock.nowMs += 1000;
    await limiter.check({ identity: 't' });
    expect(tookLease()).toEqual([false, true, false, false, true]);
  });
});

describe('leases: one instance', () => {
  it('admits from the lease without the store (source lease), remaining = the store as last seen + the lease', async () => {
    const { limiters, takes } = fleet([LEASED], 1);
    const limiter = limiters[0] as Limiter;
    const first = await limiter.check({ identity: 't' }); // a cold key: checked exactly
    expect(first).toMatchObject({ allowed: true, source: 'store', remaining: 19 });
    const take = await limiter.check({ identity: 't' });
    expect(take).toMatchObject({ allowed: true, source: 'store', remaining: 18 });
    const fromLease = await limiter.check({ identity: 't' });
    expect(fromLease).toMatchObject({ allowed: true, source: 'lease', remaining: 17 });
    expect(takes()).toBe(2);
  });

  it('drops what is left when the lease expires, and takes the next one', async () => {
    const { clock, limiters, store, takes } = fleet([LEASED], 1);
    const limiter = limiters[0] as Limiter;
    await limiter.check({ identity: 't' }); // a cold key: checked exactly
    await limiter.check({ identity: 't' }); // takes 5, spends 1
    clock.nowMs += 1000;
    const next = await limiter.check({ identity: 't' });
    expect(next.source).toBe('store');
    expect(takes()).toBe(3);
    // The 4 unspent units were dropped: the store refilled to 20 in 1 s, then gave the new lease 5.
    const [state] = await store.inner.decide(
      [{ key: store.calls[0]!.entries[0]!.key, policy: limiter.policy('leased'), cost: 1 }],
      'peek',
    );
    expect(state?.remaining).toBe(15);
    // The new lease pays 4 more without a call.
    for (let i = 0; i < 4; i++) expect((await limiter.check({ identity: 't' })).source).toBe('lease');
    expect(takes()).toBe(3);
  });

  it('remembers a denied take until its wait is over, then asks again (no deny cache)', async () => {
    const { clock, limiters, takes } = fleet([{ ...LEASED, burst: 5 }], 1, false);
    const limiter = limiters[0] as Limiter;
    for (let i = 0; i < 5; i++) expect((await limiter.check({ identity: 't' })).allowed).toBe(true);
    const denied = await limiter.check({ identity: 't' });
    expect(denied).toMatchObject({
      allowed: false,
      outcome: 'over_limit',
      source: 'store',
      retryAfterMs: 100,
    });
    // The first check was exact (a cold key), then a take of the 4 left, then the denied take.
    expect(takes()).toBe(3);
    clock.nowMs += 40;
    const remembered = await limiter.check({ identity: 't' });
    expect(remembered).toMatchObject({
      allowed: false,
      outcome: 'over_limit',
      source: 'lease',
      retryAfterMs: 60,
    });
    expect(takes()).toBe(3);
    clock.nowMs += 60;
    const again = await limiter.check({ identity: 't' });
    expect(again).toMatchObject({ allowed: true, source: 'store' });
    expect(takes()).toBe(4);
  });

  it('ends a fixed window lease with its window', async () => {
    const { clock, limiters, takes } = fleet(
      [
        {
          name: 'w',
          algorithm: 'fixed-window',
          limit: 100,
          window: '1s',
          lease: { units: 10, ttlMs: '10s' },
        },
      ],
      1,
    );
    const limiter = limiters[0] as Limiter;
    clock.nowMs = T0 + 900; // T0 is a window boundary
    await limiter.check({ identity: 't' }); // a cold key: checked exactly
    await limiter.check({ identity: 't' }); // the take
    await limiter.check({ identity: 't' });
    expect(takes()).toBe(2);
    clock.nowMs = T0 + 1000;
    expect((await limiter.check({ identity: 't' })).source).toBe('store');
    expect(takes()).toBe(3);
  });

  it('leases sliding-log (whole units) and GCRA', async () => {
    for (const algorithm of ['sliding-log', 'gcra', 'sliding-window'] as const) {
      const policy: PolicyInput =
        algorithm === 'gcra'
          ? { name: 'p', algorithm, burst: 10, rate: '10/s', lease: { units: 4, ttlMs: 1000 } }
          : { name: 'p', algorithm, limit: 10, window: '1s', lease: { units: 4, ttlMs: 1000 } };
      const { limiters, takes } = fleet([policy], 2);
      let admitted = 0;
      for (let i = 0; i < 30; i++)
        if ((await (limiters[i % 2] as Limiter).check({ identity: 't' })).allowed) admitted++;
      expect(admitted).toBeLessThanOrEqual(10);
      expect(admitted).toBeGreaterThanOrEqual(10 - 2 * 4);
      expect(takes()).toBeLessThan(30);
    }
  });

  it('peeks and idempotent checks go to the store as they are', async () => {
    const { limiters, store } = fleet([LEASED], 1);
    const limiter = limiters[0] as Limiter;
    await limiter.peek({ identity: 't' });
    await limiter.check({ identity: 't', requestId: 'r1' });
    expect(store.calls.map((c) => c.entries[0]?.cost)).toEqual([1, 1]);
    expect(store.calls.every((c) => c.entries[0]?.leastCost === undefined)).toBe(true);
  });

  it('a reset drops the instance lease', async () => {
    const { limiters, takes } = fleet([LEASED], 1);
    const limiter = limiters[0] as Limiter;
    await limiter.check({ identity: 't' });
    await limiter.reset('t');
    expect((await limiter.check({ identity: 't' })).remaining).toBe(19);
    expect(takes()).toBe(2);
  });

  it('a reserved check admitted from the lease settles in the store', async () => {
    const { limiters, store } = fleet([LEASED], 1);
    const limiter = limiters[0] as Limiter;
    await limiter.check({ identity: 't' }); // a cold key: checked exactly
    await limiter.check({ identity: 't' }); // takes 5
    const decision = await limiter.check({ identity: 't', reserve: true });
    expect(decision.source).toBe('lease');
    expect(await limiter.settle(decision, 0)).toBe('settled');
    const [state] = await store.inner.decide(
      [{ key: store.calls[0]!.entries[0]!.key, policy: limiter.policy('leased'), cost: 1 }],
      'peek',
    );
    expect(state?.remaining).toBe(15); // 20 - 1 checked exactly - 5 taken + 1 refunded
  });
});

describe('leases with other policies: all or nothing', () => {
  const strict: PolicyInput = { name: 'strict', algorithm: 'fixed-window', limit: 2, window: '1m' };

  it('a request another policy denies spends nothing of the lease', async () => {
    const { limiters, takes } = fleet([LEASED, strict], 1);
    const limiter = limiters[0] as Limiter;
    const decisions: Decision[] = [];
    for (let i = 0; i < 4; i++) decisions.push(await limiter.check({ identity: 't' }));
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, false, false]);
    expect(decisions[2]?.policy).toBe('strict');
    // 5 taken, 2 spent: the lease pays 3 more requests of the leased policy alone, with no call.
    const before = takes();
    for (let i = 0; i < 3; i++) {
      expect(await limiter.check({ identity: 't', policies: ['leased'] })).toMatchObject({
        allowed: true,
        source: 'lease',
      });
    }
    expect(takes()).toBe(before);
  });

  it('checks at once hold their units out of the lease: the leased policy is charged for every admission', async () => {
    const { limiters, store } = fleet([LEASED, { ...strict, limit: 12 }], 1);
    const limiter = limiters[0] as Limiter;
    const decisions = await Promise.all(Array.from({ length: 40 }, () => limiter.check({ identity: 't' })));
    const admitted = decisions.filter((d) => d.allowed).length;
    expect(admitted).toBe(12);
    const [state] = await store.inner.decide(
      [{ key: store.calls[0]!.entries[0]!.key, policy: limiter.policy('leased'), cost: 1 }],
      'peek',
    );
    // 20 - what the leases took: at least the admissions, at most one lease more.
    expect(20 - (state?.remaining as number)).toBeGreaterThanOrEqual(admitted);
    expect(20 - (state?.remaining as number)).toBeLessThanOrEqual(admitted + 5);
  });

  it('a take in a check another policy denies is not charged', async () => {
    const { limiters, store } = fleet([LEASED, strict], 1);
    const limiter = limiters[0] as Limiter;
    await limiter.check({ identity: 't', policies: ['strict'] });
    await limiter.check({ identity: 't', policies: ['strict'] });
    const denied = await limiter.check({ identity: 't' });
    expect(denied).toMatchObject({ allowed: false, policy: 'strict' });
    const [state] = await store.inner.decide(
      [{ key: store.calls[0]!.entries[0]!.key, policy: limiter.policy('leased'), cost: 1 }],
      'peek',
    );
    expect(state?.remaining).toBe(20);
  });
});

describe('leases when the store fails', () => {
  const withMode = (failMode: 'lease' | 'closed'): PolicyInput => ({ ...LEASED, failMode });

  it("failMode 'lease' spends the current lease, then fails as failModeAfter says (closed)", async () => {
    const { limiters, store } = fleet([withMode('lease')], 1);
    const limiter = limiters[0] as Limiter;
    await limiter.check({ identity: 't' }); // a cold key: checked exactly
    await limiter.check({ identity: 't' }); // takes 5: 4 left
    store.behaviour = 'error';
    const decisions: Decision[] = [];
    for (let i = 0; i < 6; i++) decisions.push(await limiter.check({ identity: 't' }));
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, true, false, false]);
    expect(decisions[4]).toMatchObject({ outcome: 'unavailable', source: 'fail-closed' });
  });

  it("failMode 'lease' stops at the lease TTL, and failModeAfter 'open' admits", async () => {
    const { clock, limiters, store } = fleet(
      [{ ...LEASED, failMode: 'lease', lease: { units: 5, ttlMs: 1000, failModeAfter: 'open' } }],
      1,
    );
    const limiter = limiters[0] as Limiter;
    await limiter.check({ identity: 't' }); // a cold key: checked exactly
    await limiter.check({ identity: 't' }); // the take
    store.behaviour = 'error';
    expect((await limiter.check({ identity: 't' })).source).toBe('lease');
    clock.nowMs += 1000;
    expect(await limiter.check({ identity: 't' })).toMatchObject({
      allowed: true,
      outcome: 'unavailable',
      source: 'fail-open',
    });
  });

  it("a leased policy failing 'closed' stops spending its lease once the store fails", async () => {
    const { limiters, store } = fleet([withMode('closed'), { name: 'other', limit: 100, window: '1m' }], 1);
    const limiter = limiters[0] as Limiter;
    await limiter.check({ identity: 't' });
    store.behaviour = 'error';
    expect(await limiter.check({ identity: 't' })).toMatchObject({ allowed: false, outcome: 'unavailable' });
    // The store failed: the lease is not spent while it fails, even for the leased policy alone.
    expect(await limiter.check({ identity: 't', policies: ['leased'] })).toMatchObject({
      allowed: false,
      outcome: 'unavailable',
    });
    store.behaviour = 'up';
    expect((await limiter.check({ identity: 't', policies: ['leased'] })).allowed).toBe(true);
  });
});

describe('the local stage', () => {
  const policy: PolicyInput = {
    name: 'api',
    limit: 100,
    window: '1m',
    algorithm: 'fixed-window',
    local: { burst: 3, rate: '1/s' },
  };

  it('turns a burst away in-process (source local-stage), then lets requests through again at its rate', async () => {
    const { clock, limiters, takes } = fleet([policy], 1);
    const limiter = limiters[0] as Limiter;
    for (let i = 0; i < 3; i++) expect((await limiter.check({ identity: 't' })).allowed).toBe(true);
    const denied = await limiter.check({ identity: 't' });
    expect(denied).toMatchObject({
      allowed: false,
      outcome: 'over_limit',
      source: 'local-stage',
      policy: 'api',
      retryAfterMs: 1000,
    });
    expect(takes()).toBe(3);
    clock.nowMs += 1000;
    expect(await limiter.check({ identity: 't' })).toMatchObject({ allowed: true, source: 'store' });
  });

  it('leaves the global decision to the store', async () => {
    const { limiters } = fleet([{ ...policy, limit: 2 }], 1);
    const limiter = limiters[0] as Limiter;
    const decisions = [];
    for (let i = 0; i < 3; i++) decisions.push(await limiter.check({ identity: 't' }));
    expect(decisions.map((d) => [d.allowed, d.source])).toEqual([
      [true, 'store'],
      [true, 'store'],
      [false, 'store'],
    ]);
  });
});

describe('lease and local-stage validation', () => {
  const base = { name: 'p', limit: 10, window: '1s' };
  it.each([
    [
      { ...base, lease: { units: 11, ttlMs: 1000 } },
      `policy "p": "lease.units" must not exceed the policy's limit (10), got 11`,
    ],
    [
      { ...base, lease: { units: 0, ttlMs: 1000 } },
      `policy "p": "lease.units" must be a positive whole number, got 0`,
    ],
    [
      { ...base, lease: { units: 2 } },
      `policy "p": "lease.ttlMs" is required (e.g. '1s' or milliseconds), got undefined`,
    ],
    [
      { ...base, lease: { units: 2, ttlMs: 1000, size: 3 } },
      `policy "p": "lease.size" is not a field of lease (known: units, ttlMs, failModeAfter, adaptive), got 3`,
    ],
    [
      { ...base, lease: { units: 2, ttlMs: 1000, adaptive: 'yes' } },
      `policy "p": "lease.adaptive" must be true or false, got "yes"`,
    ],
    [
      { ...base, failMode: 'lease' },
      `policy "p": "failMode" needs a lease (give lease: { units, ttlMs }, or another fail mode), got "lease"`,
    ],
    [
      { ...base, lease: { units: 2, ttlMs: 1000, failModeAfter: 'open' } },
      `policy "p": "lease.failModeAfter" applies only with failMode 'lease' (this policy fails 'closed'), got "open"`,
    ],
    [
      { ...base, failMode: 'lease', lease: { units: 2, ttlMs: 1000, failModeAfter: 'lease' } },
      `policy "p": "lease.failModeAfter" must be one of closed, open, local, got "lease"`,
    ],
    [
      { ...base, cost: 3, lease: { units: 2, ttlMs: 1000 } },
      `policy "p": "lease.units" must be at least the policy's cost (3), got 2`,
    ],
    [
      { ...base, ban: { blockMs: 1000 }, lease: { units: 2, ttlMs: 1000 } },
      `policy "p": "lease" cannot be combined with "ban" (a ban counts every denial in the store; leased requests are admitted in-process), got an object`,
    ],
    [
      { ...base, local: { burst: 0, rate: '1/s' } },
      `policy "p": "local.burst" must be a positive whole number, got 0`,
    ],
    [
      { ...base, local: { burst: 2, rate: 'fast' } },
      `policy "p": "local.rate" must be a rate such as '10/s' or { limit, window }, got "fast"`,
    ],
    [{ ...base, local: { burst: 2 } }, `policy "p": "local.rate" is required (e.g. '10/s'), got undefined`],
  ])('%j', (input, message) => {
    expect(() => createLimiter({ policies: [input as PolicyInput] })).toThrow(message);
  });
});

describe('metrics of in-process decisions', () => {
  it('counts decisions made by a lease and by a local stage, by source only', async () => {
    const { limiters } = fleet(
      [LEASED, { name: 'api', limit: 100, window: '1m', local: { burst: 1, rate: '1/s' } }],
      1,
    );
    const limiter = limiters[0] as Limiter;
    const metrics = createMetrics({ limiter, meter: false });
    expect(metrics.render()).not.toContain('sluice_in_process_decisions_total');
    await limiter.check({ identity: 't', policies: ['leased'] }); // store: a cold key, checked exactly
    await limiter.check({ identity: 't', policies: ['leased'] }); // store: the take
    await limiter.check({ identity: 't', policies: ['leased'] }); // lease
    await limiter.check({ identity: 't', policies: ['api'] }); // store
    await limiter.check({ identity: 't', policies: ['api'] }); // local stage denies
    const text = metrics.render();
    expect(text).toContain('sluice_in_process_decisions_total{source="lease"} 1\n');
    expect(text).toContain('sluice_in_process_decisions_total{source="local-stage"} 1\n');
    expect(text).not.toContain('sluice_in_process_decisions_total{source="deny-cache"}');
    expect(text).not.toContain('"t"');
  });
});
