/**
 * `limiter.checkEntries`: the caller's keys, policies and costs decided through the limiter's own
 * path (store call with breaker and deadline, local fallback, fail modes, event), all or nothing.
 * A store behind a switch; the clock injected.
 */
import { describe, expect, it } from 'vitest';
import { definePolicy } from '../policy/define-policy.js';
import type { DecisionEvent } from '../types.js';
import { createLimiter } from './create-limiter.js';
import { SwitchableStore } from './test-stores.test-support.js';

const T0 = 1_700_000_000_000;

function setup() {
  const clock = { now: T0 };
  const tick = () => clock.now;
  const store = new SwitchableStore(tick);
  const events: DecisionEvent[] = [];
  const limiter = createLimiter({
    policies: [{ name: 'unused', limit: 1, window: '1s' }],
    store,
    clock: tick,
    timeoutMs: 20,
    breaker: { failureThreshold: 2, cooldownMs: 1000 },
    onDecision: (e) => events.push(e),
  });
  return { clock, store, limiter, events };
}

const window = (name: string, limit: number, extra: Record<string, unknown> = {}) =>
  definePolicy({ name, algorithm: 'fixed-window', limit, window: '1m', ...extra });

describe('limiter.checkEntries', () => {
  it('decides the given keys in one store call, all or nothing, results in entry order', async () => {
    const { store, limiter, events } = setup();
    const a = window('rule', 3);
    // The same policy under two keys, and a policy the limiter was not built with.
    const entries = [
      { key: 'k:1', policy: a, cost: 2 },
      { key: 'k:2', policy: a, cost: 1 },
      { key: 'k:3', policy: window('other', 1), cost: 1 },
    ];
    const first = await limiter.checkEntries(entries);
    expect(first.results.map((r) => [r.policy, r.allowed, r.remaining])).toEqual([
      ['rule', true, 1],
      ['rule', true, 2],
      ['other', true, 0],
    ]);
    expect(store.calls).toHaveLength(1);
    const denied = await limiter.checkEntries(entries);
    expect(denied).toMatchObject({ allowed: false, outcome: 'over_limit', source: 'store' });
    // Nothing was charged by the denied call.
    const look = await limiter.checkEntries(entries, 'peek');
    expect(look.results.map((r) => r.remaining)).toEqual([1, 2, 0]);
    expect(store.calls.at(-1)?.mode).toBe('peek');
    // Two consuming calls emitted; the look did not.
    expect(events.map((e) => e.outcome)).toEqual(['allowed', 'over_limit']);
  });

  it('a cost above the limit is denied by the store, not refused', async () => {
    const { limiter } = setup();
    const decision = await limiter.checkEntries([{ key: 'k', policy: window('rule', 3), cost: 5 }]);
    expect(decision).toMatchObject({ allowed: false, outcome: 'over_limit' });
  });

  it('the store failing: each fail mode as in check; a shadow closed policy does not fail the call', async () => {
    const { store, limiter } = setup();
    store.behaviour = 'error';
    const open = window('open', 5, { failMode: 'open' });
    const shadowClosed = window('shadow', 5, { failMode: 'closed', shadow: true });
    const local = window('local', 1, { failMode: 'local' });
    const lenient = await limiter.checkEntries([
      { key: 'o', policy: open, cost: 1 },
      { key: 's', policy: shadowClosed, cost: 1 },
    ]);
    expect(lenient).toMatchObject({
      allowed: true,
      outcome: 'unavailable',
      source: 'fail-open',
      shadowed: true,
    });
    const closed = await limiter.checkEntries([{ key: 'c', policy: window('closed', 5), cost: 1 }]);
    expect(closed).toMatchObject({ allowed: false, outcome: 'unavailable', source: 'fail-closed' });
    // The breaker opened after two failures: the store is no longer called, the local fallback decides.
    const calls = store.calls.length;
    const locals = [];
    for (let i = 0; i < 2; i++)
      locals.push(await limiter.checkEntries([{ key: 'l', policy: local, cost: 1 }]));
    expect(store.calls).toHaveLength(calls);
    expect(limiter.breakerState).toBe('open');
    expect(locals.map((d) => [d.source, d.allowed])).toEqual([
      ['local', true],
      ['local', false],
    ]);
    expect(limiter.counters.store.errors.breaker_open).toBe(2);
  });

  it('refuses bad entries with a TypeError naming the entry and field, before any store call', async () => {
    const { store, limiter } = setup();
    const p = window('rule', 3);
    await expect(limiter.checkEntries([{ key: '', policy: p, cost: 1 }])).rejects.toThrow(
      /limiter\.checkEntries: entries\[0\]\.key must be a non-empty string, got ""/,
    );
    await expect(
      limiter.checkEntries([
        { key: 'a', policy: p, cost: 1 },
        { key: 'b', policy: p, cost: 1.5 },
      ]),
    ).rejects.toThrow(/entries\[1\]\.cost must be a whole number for fixed-window/);
    await expect(limiter.checkEntries([{ key: 'a', policy: { ...p } as typeof p, cost: 1 }])).rejects.toThrow(
      /entries\[0\]\.policy must be a policy compiled by definePolicy/,
    );
    const slots = definePolicy({ name: 'slots', algorithm: 'concurrency', limit: 2 });
    await expect(limiter.checkEntries([{ key: 'a', policy: slots, cost: 1 }])).rejects.toThrow(
      /entries\[0\]\.policy "slots" holds concurrency slots/,
    );
    expect(store.calls).toHaveLength(0);
    expect(limiter.breakerState).toBe('closed');
    expect(await limiter.checkEntries([])).toMatchObject({ allowed: true, results: [] });
  });
});
