import { describe, expect, it } from 'vitest';
import { definePolicy } from '../policy/define-policy.js';
import { countMapIterations } from '../stores/map-iterations.test-support.js';
import { MemoryStore } from '../stores/memory-store.js';
import type { PolicyInput, PolicyResult, Store, StoreVerdict } from '../types.js';
import { createLimiter } from './create-limiter.js';
import { DenyCache, longestWaitMs } from './deny-cache.js';

const T0 = 1_700_000_000_000;
const YEAR_MS = 365 * 24 * 3600 * 1000;

function denied(policy: PolicyInput, retryAfterMs: number): PolicyResult {
  const p = definePolicy(policy);
  return {
    policy: p.name,
    algorithm: p.algorithm,
    allowed: false,
    outcome: 'over_limit',
    limit: p.limit,
    windowMs: p.windowMs,
    remaining: 0,
    resetMs: retryAfterMs,
    retryAfterMs,
    cost: 1,
    shadow: false,
    failMode: p.failMode,
  };
}

describe('DenyCache', () => {
  it('never keeps a wait longer than the policy can ask for', () => {
    const cache = new DenyCache(10, Number.POSITIVE_INFINITY);
    // A full refill: 20 s, and 20 s more to repay a settle's debt of one limit.
    const policy: PolicyInput = { name: 'b', burst: 20, rate: '1/s' };
    // A wait of 25 years: what a state misread as another algorithm's produced.
    cache.remember('k', [1], [denied(policy, 25 * YEAR_MS)], T0);
    const now = cache.lookup('k', [1], T0 + 1);
    expect(now?.[0]?.retryAfterMs).toBeLessThanOrEqual(40_000);
    expect(cache.lookup('k', [1], T0 + 40_000)).toBeUndefined();
  });

  it('bounds each algorithm by its longest wait', () => {
    for (const algorithm of [
      'token-bucket',
      'gcra',
      'fixed-window',
      'sliding-log',
      'sliding-window',
    ] as const) {
      const policy: PolicyInput =
        algorithm === 'token-bucket' || algorithm === 'gcra'
          ? { name: 'p', algorithm, burst: 10, rate: '10/m' }
          : { name: 'p', algorithm, limit: 10, window: '1m' };
      const cache = new DenyCache(10, Number.POSITIVE_INFINITY);
      cache.remember('k', [1], [denied(policy, YEAR_MS)], T0);
      const longest = longestWaitMs(algorithm, 60_000);
      const twoWindows = ['sliding-window', 'token-bucket', 'gcra'].includes(algorithm);
      expect(longest).toBe(twoWindows ? 120_000 : 60_000);
      expect(cache.lookup('k', [1], T0 + longest - 2)).toBeDefined();
      expect(cache.lookup('k', [1], T0 + longest)).toBeUndefined();
    }
  });

  it('forgets a denial after maxAgeMs even when the wait is longer', () => {
    const cache = new DenyCache(10, 1000);
    cache.remember('k', [1], [denied({ name: 'h', limit: 1, window: '1h' }, 3_000_000)], T0);
    expect(cache.lookup('k', [1], T0 + 999)?.[0]?.retryAfterMs).toBe(3_000_000 - 999);
    expect(cache.lookup('k', [1], T0 + 1000)).toBeUndefined();
  });

  it('remembers and evicts without iterating a Map, at the same work per call', () => {
    const cache = new DenyCache(1000, 60_000);
    const result = [denied({ name: 'h', limit: 1, window: '1h' }, 30_000)];
    const work = (round: number): { slots: number; iterations: number } => {
      const before = cache.visitedSlots;
      const iterations = countMapIterations(() => {
        for (let i = 0; i < 1000; i++) {
          cache.remember(`r${round}:${i}`, [1], result, T0);
          cache.lookup(`r${round}:${i}`, [1], T0 + 1);
        }
      });
      return { slots: (cache.visitedSlots - before) / 1000, iterations };
    };
    work(0);
    const early = work(1);
    for (let round = 2; round < 20; round++) work(round);
    const late = work(20);
    expect(early.iterations + late.iterations).toBe(0);
    expect(early.slots).toBeGreaterThan(0);
    expect(late.slots).toBe(early.slots);
    expect(cache.size).toBe(1000);
  });
});

describe('DenyCache: what a hit answers', () => {
  const long = denied({ name: 'long', limit: 1, window: '1h' }, 30_000);
  const short = denied({ name: 'short', limit: 1, window: '1m' }, 2_000);
  const watch: PolicyResult = { ...denied({ name: 'watch', limit: 1, window: '1m' }, 5_000), shadow: true };
  const ok: PolicyResult = {
    ...denied({ name: 'ok', limit: 5, window: '1m' }, 0),
    allowed: true,
    outcome: 'allowed',
    remaining: 3,
    resetMs: 10_000,
  };
  const row = (r: PolicyResult) => [r.policy, r.allowed, r.outcome, r.retryAfterMs, r.resetMs, r.cost];

  it('counts every wait and reset down from the moment remembered; an entry whose wait is over admits', () => {
    const cache = new DenyCache(10, 60_000);
    cache.remember('k', [1, 1, 1, 1], [long, short, watch, ok], T0);
    expect(cache.lookup('k', [1, 1, 1, 1], T0 + 1000)?.map(row)).toEqual([
      ['long', false, 'over_limit', 30_000 - 1000, 29_000, 1],
      ['short', false, 'over_limit', 1000, 1000, 1],
      ['watch', false, 'over_limit', 4000, 4000, 1],
      ['ok', true, 'allowed', 0, 9000, 1],
    ]);
    // At the instant the short wait ends, that entry admits.
    expect(cache.lookup('k', [1, 1, 1, 1], T0 + 1999)?.[1]).toMatchObject({ allowed: true, retryAfterMs: 0 });
    // Past the short wait: that entry might fit now, so it admits; the shadow one only counts down.
    expect(cache.lookup('k', [1, 1, 1, 2], T0 + 6000)?.map(row)).toEqual([
      ['long', false, 'over_limit', 30_000 - 6000, 24_000, 1],
      ['short', true, 'allowed', 0, 0, 1],
      ['watch', false, 'over_limit', 0, 0, 1],
      ['ok', true, 'allowed', 0, 4000, 2],
    ]);
  });

  it('a lower cost on the denying entry is a miss', () => {
    const cache = new DenyCache(10, 60_000);
    cache.remember('k', [2], [{ ...long, cost: 2 }], T0);
    expect(cache.lookup('k', [1], T0 + 1)).toBeUndefined();
    expect(cache.lookup('k', [2], T0 + 1)?.[0]).toMatchObject({ allowed: false, cost: 2 });
  });

  it('a shadow denial alone, or a wait of 1 ms, is never remembered', () => {
    const cache = new DenyCache(10, 60_000);
    cache.remember('s', [1], [watch], T0);
    cache.remember('m', [1], [denied({ name: 'm', limit: 1, window: '1m' }, 1)], T0);
    expect(cache.size).toBe(0);
    expect(cache.lookup('s', [1], T0)).toBeUndefined();
  });

  it('a denial that would end at once is not remembered, so it evicts nothing', () => {
    const cache = new DenyCache(1, 60_000);
    cache.remember('a', [1], [long], T0);
    // A wait bounded by a 1 ms window ends at the moment remembered.
    cache.remember('b', [1], [{ ...long, windowMs: 1, algorithm: 'fixed-window' }], T0);
    expect(cache.lookup('a', [1], T0 + 1)?.[0]?.allowed).toBe(false);
  });

  it('a clock that went back is a miss, and forgets the entry', () => {
    const cache = new DenyCache(10, 60_000);
    cache.remember('k', [1], [long], T0);
    expect(cache.lookup('k', [1], T0 - 1)).toBeUndefined();
    expect(cache.size).toBe(0);
    expect(cache.lookup('k', [1], T0 + 1)).toBeUndefined();
  });

  it('remembering a set again replaces it; forgetting no keys keeps everything; clear empties it', () => {
    const cache = new DenyCache(2, 60_000);
    cache.remember('a', [1], [long], T0);
    cache.remember('b', [1], [long], T0);
    cache.remember('a', [1], [short], T0 + 10);
    expect(cache.size).toBe(2);
    expect(cache.lookup('a', [1], T0 + 20)?.[0]?.retryAfterMs).toBe(2000 - 10);
    expect(cache.lookup('b', [1], T0 + 20)?.[0]?.retryAfterMs).toBe(30_000 - 20);
    cache.forget([]);
    expect(cache.size).toBe(2);
    cache.forget(['b']);
    expect([cache.size, cache.lookup('b', [1], T0 + 20)]).toEqual([1, undefined]);
    cache.clear();
    expect([cache.size, cache.lookup('a', [1], T0 + 20)]).toEqual([0, undefined]);
  });
});

describe('deny cache in the limiter', () => {
  it('answers a wait no longer than the policy allows when the store reports more', async () => {
    const clock = () => T0;
    const policy: PolicyInput = { name: 'b', burst: 20, rate: '1/s' };
    const verdict: StoreVerdict = {
      allowed: false,
      remaining: 0,
      resetMs: 20_000,
      retryAfterMs: 25 * YEAR_MS,
    };
    const store: Store = {
      kind: 'misreading',
      decide: (entries) => Promise.resolve(entries.map(() => ({ ...verdict }))),
      reset: () => Promise.resolve(),
    };
    const limiter = createLimiter({ policies: [policy], store, clock });
    await limiter.check({ identity: 'a' });
    const cached = await limiter.check({ identity: 'a' });
    expect(cached.source).toBe('deny-cache');
    expect(cached.retryAfterMs).toBeLessThanOrEqual(40_000);
  });

  it('sees a reset made by another limiter on the same store within maxAgeMs', async () => {
    const now = { t: T0 };
    const clock = () => now.t;
    const store = new MemoryStore({ clock });
    const policies: PolicyInput[] = [{ name: 'login', algorithm: 'fixed-window', limit: 1, window: '1h' }];
    const a = createLimiter({ policies, store, clock });
    const b = createLimiter({ policies, store, clock, denyCache: false });
    await a.check({ identity: 'u' });
    expect((await a.check({ identity: 'u' })).source).toBe('store');
    expect((await a.check({ identity: 'u' })).source).toBe('deny-cache');
    await b.reset('u');
    now.t += 999;
    expect((await a.check({ identity: 'u' })).source).toBe('deny-cache');
    now.t += 1;
    expect(await a.check({ identity: 'u' })).toMatchObject({ allowed: true, source: 'store' });
  });

  it('takes maxAgeMs from the options and names a bad one', () => {
    const policies: PolicyInput[] = [{ name: 'p', limit: 1, window: '1h' }];
    expect(() => createLimiter({ policies, denyCache: { maxAgeMs: 0 } })).toThrow(
      'createLimiter: "denyCache.maxAgeMs" must be a positive, finite number, got 0',
    );
  });
});
