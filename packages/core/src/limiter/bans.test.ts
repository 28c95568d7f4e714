/**
 * Bans through the limiter on MemoryStore with an injected clock: the decision says `banned`,
 * Retry-After is the rest of the block, metrics keep their labels, shadow reports without
 * enforcing, the deny cache answers a ban as the store made it, and a reset lifts it.
 */
import { describe, expect, it } from 'vitest';
import { toHttpVerdict } from '../http/verdict.js';
import { MemoryStore } from '../stores/memory-store.js';
import type { DecisionEvent, PolicyInput } from '../types.js';
import { createLimiter } from './create-limiter.js';

const T0 = 1_800_000_000_000;
const login: PolicyInput = {
  name: 'login',
  algorithm: 'fixed-window',
  limit: 2,
  window: '1m',
  ban: { blockMs: '10m', escalation: { violations: 2, windowMs: '1h', blockMs: '1d' } },
};

function setup(policy: PolicyInput, denyCache = false) {
  const clock = { now: T0 };
  const events: DecisionEvent[] = [];
  const limiter = createLimiter({
    policies: [policy],
    store: new MemoryStore({ clock: () => clock.now }),
    clock: () => clock.now,
    ...(denyCache ? {} : { denyCache: false }),
    onDecision: (e) => events.push(e),
  });
  return { clock, limiter, events };
}

describe('bans through the limiter', () => {
  it('the denial that starts a ban and every check during it say banned; Retry-After is the rest of the block', async () => {
    const { clock, limiter, events } = setup(login);
    const who = { kind: 'key', value: 'k-1' } as const;
    await limiter.check({ identity: who });
    await limiter.check({ identity: who });
    const denied = await limiter.check({ identity: who });
    expect(denied).toMatchObject({
      allowed: false,
      outcome: 'over_limit',
      policy: 'login',
      retryAfterMs: 600_000,
    });
    expect(denied.results[0]?.banned).toBe(true);
    expect(toHttpVerdict(denied).headers['Retry-After']).toBe('600');
    clock.now += 120_000; // the window is long over: only the ban denies
    const banned = await limiter.check({ identity: who });
    expect(banned.results[0]).toMatchObject({
      allowed: false,
      banned: true,
      retryAfterMs: 480_000,
      remaining: 2,
    });
    expect(toHttpVerdict(banned)).toMatchObject({ status: 429 });
    expect(toHttpVerdict(banned).headers['Retry-After']).toBe('480');
    // Metrics keep their policy and outcome labels; no identity anywhere in the event.
    expect(events.map((e) => e.metricOutcomes)).toContainEqual([{ policy: 'login', outcome: 'over_limit' }]);
    expect(JSON.stringify(events)).not.toContain('k-1');
    // The ban ends; the second violation within the hour escalates to a day.
    clock.now = T0 + 600_001;
    expect((await limiter.check({ identity: who })).allowed).toBe(true);
    await limiter.check({ identity: who });
    const escalated = await limiter.check({ identity: who });
    expect(escalated.results[0]).toMatchObject({ banned: true, retryAfterMs: 86_400_000 });
    // Another identity is not banned.
    expect((await limiter.check({ identity: 'someone' })).allowed).toBe(true);
  });

  it('limiter.reset lifts the ban', async () => {
    const { limiter } = setup(login);
    for (let i = 0; i < 3; i++) await limiter.check({ identity: 'a' });
    expect((await limiter.check({ identity: 'a' })).results[0]?.banned).toBe(true);
    await limiter.reset('a');
    const after = await limiter.check({ identity: 'a' });
    expect(after.allowed).toBe(true);
    expect(after.results[0]?.banned).toBeUndefined();
  });

  it('shadow mode reports the ban without enforcing it', async () => {
    const { limiter, events } = setup({ ...login, shadow: true });
    for (let i = 0; i < 3; i++) await limiter.check({ identity: 'a' });
    const d = await limiter.check({ identity: 'a' });
    expect(d).toMatchObject({ allowed: true, shadowed: true });
    expect(d.results[0]).toMatchObject({ allowed: false, banned: true, shadow: true });
    expect(toHttpVerdict(d).status).toBe(200);
    expect(events.at(-1)?.metricOutcomes).toEqual([{ policy: 'login', outcome: 'shadow_over_limit' }]);
  });

  it('the deny cache answers a ban it saw as banned, for at most its maxAgeMs', async () => {
    const { clock, limiter } = setup(login, true);
    for (let i = 0; i < 3; i++) await limiter.check({ identity: 'a' });
    const cached = await limiter.check({ identity: 'a' });
    expect(cached.source).toBe('deny-cache');
    expect(cached.results[0]).toMatchObject({ allowed: false, banned: true });
    clock.now += 5_000;
    const fromStore = await limiter.check({ identity: 'a' });
    expect(fromStore.source).toBe('store');
    expect(fromStore.results[0]).toMatchObject({ banned: true, retryAfterMs: 595_000 });
  });

  it('a policy without a ban never says banned', async () => {
    const { ban: _ban, ...plain } = login;
    const { limiter } = setup(plain);
    for (let i = 0; i < 5; i++)
      expect((await limiter.check({ identity: 'a' })).results[0]?.banned).toBeUndefined();
  });
});
