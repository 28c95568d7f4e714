/**
 * The breaker's half-open state: while the one probe is in flight, concurrent checks never
 * reach the store and are decided by their fail modes; a successful probe closes the breaker
 * for everyone, a failed one opens it for another cool-down. Plus a model check of
 * `CircuitBreaker` over random sequences of permits, answers and clock moves.
 */

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { PolicyInput } from '../types.js';
import { createLimiter } from './create-limiter.js';
import { type BreakerPermit, CircuitBreaker } from './store-call.js';
import { GatedStore } from './test-stores.test-support.js';

const closed: PolicyInput = { name: 'strict', limit: 100, window: '1m', failMode: 'closed' };
const open: PolicyInput = { name: 'lenient', limit: 100, window: '1m', failMode: 'open' };
const local: PolicyInput = { name: 'local', burst: 3, rate: '1/m', failMode: 'local' };

const COOLDOWN_MS = 1000;
const THRESHOLD = 2;
/** Checks started while the probe is in flight. */
const CONCURRENT = 20;

function setup() {
  const clock = { now: 1_800_000_000_000 };
  const tick = () => clock.now;
  const store = new GatedStore(tick);
  const limiter = createLimiter({
    policies: [closed, open, local],
    store,
    clock: tick,
    // Far beyond the test: a held probe is ended by the test, never by the deadline.
    timeoutMs: 60_000,
    breaker: { failureThreshold: THRESHOLD, cooldownMs: COOLDOWN_MS },
  });
  return { clock, store, limiter };
}

/** Opens the breaker with failed calls, lets the cool-down pass, and holds the next store call. */
async function halfOpen(s: ReturnType<typeof setup>): Promise<void> {
  for (let i = 0; i < THRESHOLD; i++) await s.limiter.check({ identity: 'a', policies: ['strict'] });
  expect(s.limiter.breakerState).toBe('open');
  s.clock.now += COOLDOWN_MS;
  expect(s.limiter.breakerState).toBe('half-open');
  s.store.holding = true;
}

describe('breaker: half-open with concurrent checks', () => {
  it('while a successful probe is in flight, no other check reaches the store; then it closes', async () => {
    const s = setup();
    await halfOpen(s);
    const callsBefore = s.store.calls;
    const probe = s.limiter.check({ identity: 'a', policies: ['strict'] });
    expect(s.store.heldCount).toBe(1);
    expect(s.limiter.breakerState).toBe('half-open');

    const concurrent = await Promise.all(
      Array.from({ length: CONCURRENT }, (_, i) =>
        s.limiter.check({ identity: `id-${i % 4}`, policies: [['strict', 'lenient', 'local'][i % 3]!] }),
      ),
    );
    // Every concurrent check was decided without the store, by its policy's fail mode.
    expect(s.store.calls).toBe(callsBefore + 1);
    const bySource = concurrent.map((d, i) => [i % 3, d.outcome, d.source, d.allowed]);
    for (const [mode, outcome, source, allowed] of bySource) {
      if (mode === 0) expect([outcome, source, allowed]).toEqual(['unavailable', 'fail-closed', false]);
      if (mode === 1) expect([outcome, source, allowed]).toEqual(['unavailable', 'fail-open', true]);
      if (mode === 2) expect([source]).toEqual(['local']);
    }
    expect(
      concurrent.flatMap((d) => d.results).some((r) => r.outcome === 'over_limit' && r.failMode !== 'local'),
    ).toBe(false);
    expect(s.limiter.breakerState).toBe('half-open');

    s.store.failing = false;
    s.store.release('succeed');
    expect(await probe).toMatchObject({ allowed: true, outcome: 'allowed', source: 'store', remaining: 99 });
    expect(s.limiter.breakerState).toBe('closed');

    // Closed: every check goes to the store again, concurrently.
    const after = await Promise.all(
      Array.from({ length: CONCURRENT }, () => s.limiter.check({ identity: 'a', policies: ['strict'] })),
    );
    expect(s.store.calls).toBe(callsBefore + 1 + CONCURRENT);
    expect(after.every((d) => d.source === 'store' && d.allowed)).toBe(true);
    expect(after.map((d) => d.remaining).sort((x, y) => y - x)).toEqual(
      Array.from({ length: CONCURRENT }, (_, i) => 98 - i),
    );
  });

  it('a probe that fails while others wait opens the breaker for a whole new cool-down', async () => {
    const s = setup();
    await halfOpen(s);
    const callsBefore = s.store.calls;
    const probe = s.limiter.check({ identity: 'a', policies: ['strict'] });
    const concurrent = await Promise.all(
      Array.from({ length: CONCURRENT }, () => s.limiter.check({ identity: 'b', policies: ['strict'] })),
    );
    expect(concurrent.every((d) => d.source === 'fail-closed')).toBe(true);
    s.clock.now += 400; // part of a cool-down passes while the probe is out
    s.store.release('fail');
    expect(await probe).toMatchObject({ outcome: 'unavailable', source: 'fail-closed' });
    expect(s.store.calls).toBe(callsBefore + 1);
    expect(s.limiter.breakerState).toBe('open');
    // The cool-down counts from the failed probe, not from when the breaker first opened.
    s.clock.now += COOLDOWN_MS - 1;
    await s.limiter.check({ identity: 'a', policies: ['strict'] });
    expect(s.store.calls).toBe(callsBefore + 1);
    s.clock.now += 1;
    expect(s.limiter.breakerState).toBe('half-open');
    s.store.failing = false;
    expect(await s.limiter.check({ identity: 'a', policies: ['strict'] })).toMatchObject({ source: 'store' });
    expect(s.limiter.breakerState).toBe('closed');
  });
});

describe('CircuitBreaker: model', () => {
  type Op =
    | { kind: 'permit' }
    | { kind: 'succeed'; pick: number }
    | { kind: 'fail'; pick: number }
    | { kind: 'advance'; ms: number };
  // Weighted so that runs open the breaker, reach half-open and grant probes often.
  const op: fc.Arbitrary<Op> = fc.oneof(
    { weight: 4, arbitrary: fc.constant<Op>({ kind: 'permit' }) },
    { weight: 1, arbitrary: fc.nat(20).map<Op>((pick) => ({ kind: 'succeed', pick })) },
    { weight: 4, arbitrary: fc.nat(20).map<Op>((pick) => ({ kind: 'fail', pick })) },
    { weight: 2, arbitrary: fc.integer({ min: -200, max: 1500 }).map<Op>((ms) => ({ kind: 'advance', ms })) },
  );

  it('one probe at a time, no call while open, closed by a success, reopened by a failed probe', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 4 }),
        fc.array(op, { minLength: 20, maxLength: 120 }),
        (threshold, ops) => {
          let now = 1_800_000_000_000;
          const breaker = new CircuitBreaker(threshold, COOLDOWN_MS, () => now);
          // Permits whose answer is still out; `current` is false for probes of an earlier opening.
          const inFlight: { permit: BreakerPermit; current: boolean }[] = [];
          for (const step of ops) {
            if (step.kind === 'advance') {
              now += step.ms;
              continue;
            }
            if (step.kind === 'permit') {
              const before = breaker.state;
              const permit = breaker.permit();
              const probes = inFlight.filter((p) => p.permit === 'probe' && p.current).length;
              if (before === 'closed') expect(permit).toBe('call');
              if (before === 'open') expect(permit).toBe('reject');
              if (permit === 'probe') expect(probes).toBe(0);
              if (before === 'half-open' && probes > 0) expect(permit).toBe('reject');
              if (permit !== 'reject') inFlight.push({ permit, current: true });
              continue;
            }
            if (inFlight.length === 0) continue;
            const { permit } = inFlight.splice(step.pick % inFlight.length, 1)[0]!;
            if (step.kind === 'succeed') {
              breaker.success();
              expect(breaker.state).toBe('closed');
              for (const p of inFlight) p.current = false;
            } else {
              breaker.failure(permit);
              if (permit === 'probe') {
                expect(breaker.state).toBe('open');
                expect(breaker.remainingCooldownMs).toBe(COOLDOWN_MS);
              }
            }
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
