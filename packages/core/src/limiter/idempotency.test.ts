import { describe, expect, it } from 'vitest';
import type { PolicyInput } from '../types.js';
import { createLimiter } from './create-limiter.js';
import { SwitchableStore } from './test-stores.test-support.js';

function setup(policies: readonly PolicyInput[], ttlMs?: number) {
  const clock = { now: 1_700_000_000_000 };
  const tick = () => clock.now;
  const store = new SwitchableStore(tick);
  const limiter = createLimiter({
    policies,
    store,
    clock: tick,
    timeoutMs: 50,
    ...(ttlMs === undefined ? {} : { idempotency: { ttlMs } }),
  });
  return { clock, store, limiter };
}

const bucket: PolicyInput = { name: 'bucket', burst: 3, rate: '1/s' };

describe('idempotent checks (descriptor.requestId)', () => {
  it('a retry with the same request id returns the first decision and charges nothing', async () => {
    const { limiter } = setup([bucket]);
    const first = await limiter.check({ identity: 'a', requestId: 'r-1' });
    const retry = await limiter.check({ identity: 'a', requestId: 'r-1' });
    expect(retry).toEqual(first);
    expect((await limiter.peek({ identity: 'a' })).remaining).toBe(2);
    // Another id, or another identity with the same id, is a new request.
    expect((await limiter.check({ identity: 'a', requestId: 'r-2' })).remaining).toBe(1);
    expect((await limiter.check({ identity: 'b', requestId: 'r-1' })).remaining).toBe(2);
  });

  it('a request id never replays across identity kinds or policy sets', async () => {
    const other: PolicyInput = { name: 'other', burst: 2, rate: '1/s' };
    const { limiter } = setup([bucket, other]);
    // Drain `bucket` for the API key 127.0.0.1 under one request id...
    const key = { kind: 'key', value: '127.0.0.1' } as const;
    for (let i = 0; i < 3; i++) await limiter.check({ identity: key, policies: ['bucket'] });
    const denied = await limiter.check({ identity: key, requestId: 'r', policies: ['bucket'] });
    expect(denied.allowed).toBe(false);
    // ...the client 127.0.0.1 with the same id is decided afresh,
    const ip = await limiter.check({
      identity: { kind: 'ip', value: '127.0.0.1' },
      requestId: 'r',
      policies: ['bucket'],
    });
    expect([ip.allowed, ip.remaining]).toEqual([true, 2]);
    // ...and so is the same identity with the same id on another policy set: charged, not replayed.
    const otherSet = await limiter.check({ identity: key, requestId: 'r', policies: ['other'] });
    expect([otherSet.allowed, otherSet.policy, otherSet.remaining]).toEqual([true, 'other', 1]);
    const both = await limiter.check({ identity: key, requestId: 'r' });
    expect(both.results.map((r) => r.policy)).toEqual(['bucket', 'other']);
    expect(both.allowed).toBe(false);
    expect((await limiter.peek({ identity: key, policies: ['other'] })).remaining).toBe(1);
    // The same id, identity and policy set still replays.
    expect(await limiter.check({ identity: key, requestId: 'r', policies: ['other'] })).toEqual(otherSet);
    expect((await limiter.peek({ identity: key, policies: ['other'] })).remaining).toBe(1);
  });

  it('a denied request stays denied on retry, until the record expires', async () => {
    const { limiter, clock } = setup([bucket], 5000);
    for (let i = 0; i < 3; i++) await limiter.check({ identity: 'a' });
    const denied = await limiter.check({ identity: 'a', requestId: 'late' });
    expect(denied.allowed).toBe(false);
    clock.now += 2000; // capacity is back, but the recorded answer stands
    expect((await limiter.check({ identity: 'a', requestId: 'late' })).allowed).toBe(false);
    clock.now += 3001; // the record is gone: a new decision
    expect((await limiter.check({ identity: 'a', requestId: 'late' })).allowed).toBe(true);
  });

  it('skips the deny cache so a recorded answer is never shadowed by it', async () => {
    const { limiter, store } = setup([bucket]);
    for (let i = 0; i < 4; i++) await limiter.check({ identity: 'a' });
    expect((await limiter.check({ identity: 'a' })).source).toBe('deny-cache');
    store.calls = [];
    expect(await limiter.check({ identity: 'a', requestId: 'x' })).toMatchObject({
      source: 'store',
      allowed: false,
    });
    expect(store.calls).toHaveLength(1);
  });

  it('with a shadow denial, the one store call is recorded: a retry charges nothing twice', async () => {
    const { limiter, store } = setup([
      bucket,
      { name: 'probe', algorithm: 'fixed-window', limit: 1, window: '1m', shadow: true },
    ]);
    await limiter.check({ identity: 'a' }); // probe is now full
    store.calls = [];
    const first = await limiter.check({ identity: 'a', requestId: 'r' });
    expect(first).toMatchObject({ allowed: true, shadowed: true, remaining: 1 });
    expect(store.calls).toHaveLength(1);
    const retry = await limiter.check({ identity: 'a', requestId: 'r' });
    expect(retry).toEqual(first);
    expect(store.calls).toHaveLength(2);
    expect((await limiter.peek({ identity: 'a', policies: ['bucket'] })).remaining).toBe(1);
  });

  it('peek ignores the request id; store failures decide by fail mode as usual', async () => {
    const { limiter, store } = setup([bucket]);
    expect((await limiter.peek({ identity: 'a', requestId: '' })).remaining).toBe(3);
    store.behaviour = 'error';
    expect(await limiter.check({ identity: 'a', requestId: 'r' })).toMatchObject({
      outcome: 'unavailable',
      source: 'fail-closed',
    });
    store.behaviour = 'up';
    expect(await limiter.check({ identity: 'a', requestId: 'r' })).toMatchObject({
      allowed: true,
      remaining: 2,
    });
  });

  it('rejects an empty or non-string request id, and a bad ttl', async () => {
    const { limiter } = setup([bucket]);
    await expect(limiter.check({ identity: 'a', requestId: '' })).rejects.toThrow(
      new TypeError('limiter.check: "requestId" must be a non-empty string, got ""'),
    );
    await expect(limiter.check({ identity: 'a', requestId: 5 as never })).rejects.toThrow(
      new TypeError('limiter.check: "requestId" must be a non-empty string, got 5'),
    );
    expect(() => createLimiter({ policies: [bucket], idempotency: { ttlMs: 0 } })).toThrow(
      expect.objectContaining({
        name: 'RateLimitOptionsError',
        code: 'INVALID_OPTIONS',
        message: 'createLimiter: "idempotency.ttlMs" must be a positive integer, got 0',
      }),
    );
  });
});
