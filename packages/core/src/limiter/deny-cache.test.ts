import { describe, expect, it } from 'vitest';
import { definePolicy } from '../policy/define-policy.js';
import { countMapIterations } from '../stores/map-iterations.test-support.js';
import { MemoryStore } from '../stores/memory-store.js';
import type { PolicyInput, PolicyResult, Store, StoreEntry, StoreVerdict } from '../types.js';
import { createLimiter } from './create-limiter.js';
import { DenialMemory, deniedFromMemory, longestWaitMs, rememberDenied } from './denial-memory.js';

const T0 = 1_700_000_000_000;
const YEAR_MS = 365 * 24 * 3600 * 1000;

/** One key of a check and what the store said of it. */
interface Seen {
  readonly entry: StoreEntry;
  readonly verdict: StoreVerdict;
}

function denied(key: string, policy: PolicyInput, retryAfterMs: number, cost = 1): Seen {
  const verdict = { allowed: false, remaining: 0, resetMs: retryAfterMs, retryAfterMs };
  return { entry: { key, policy: definePolicy(policy), cost }, verdict };
}

/** Remembers a check of `seen` asked at `atMs`, as the deny cache step does. */
function remember(memory: DenialMemory, seen: readonly Seen[], atMs: number): boolean {
  return rememberDenied(
    memory,
    seen.map((s) => s.entry),
    seen.map((s) => s.verdict),
    atMs,
  );
}

/** The deny cache's answer at `nowMs` to a check of the keys of `seen` at `costs` (default: theirs). */
function lookup(memory: DenialMemory, seen: readonly Seen[], nowMs: number, costs?: number[]) {
  const entries = seen.map((s, i) => ({ ...s.entry, cost: costs?.[i] ?? s.entry.cost }));
  return deniedFromMemory(memory, entries, nowMs);
}

describe('the deny cache in the memory of denials', () => {
  it('never keeps a wait longer than the policy can ask for', () => {
    const memory = new DenialMemory(10, Number.POSITIVE_INFINITY);
    // A full refill: 20 s, and 20 s more to repay a settle's debt of one limit.
    // A wait of 25 years: what a state misread as another algorithm's produced.
    const k = denied('k', { name: 'b', burst: 20, rate: '1/s' }, 25 * YEAR_MS);
    remember(memory, [k], T0);
    const now = lookup(memory, [k], T0 + 1);
    expect(now?.[0]?.retryAfterMs).toBeLessThanOrEqual(40_000);
    expect(lookup(memory, [k], T0 + 40_000)).toBeUndefined();
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
      const memory = new DenialMemory(10, Number.POSITIVE_INFINITY);
      const k = denied('k', policy, YEAR_MS);
      remember(memory, [k], T0);
      const longest = longestWaitMs(algorithm, 60_000);
      const twoWindows = ['sliding-window', 'token-bucket', 'gcra'].includes(algorithm);
      expect(longest).toBe(twoWindows ? 120_000 : 60_000);
      expect(lookup(memory, [k], T0 + longest - 2)).toBeDefined();
      expect(lookup(memory, [k], T0 + longest)).toBeUndefined();
    }
  });

  it('forgets a denial after maxAgeMs even when the wait is longer', () => {
    const memory = new DenialMemory(10, 1000);
    const k = denied('k', { name: 'h', limit: 1, window: '1h' }, 3_000_000);
    remember(memory, [k], T0);
    expect(lookup(memory, [k], T0 + 999)?.[0]?.retryAfterMs).toBe(3_000_000 - 999);
    expect(lookup(memory, [k], T0 + 1000)).toBeUndefined();
  });

  it('remembers and evicts without iterating a Map, at the same work per call', () => {
    const memory = new DenialMemory(1000, 60_000);
    const work = (round: number): { slots: number; iterations: number } => {
      const before = memory.visitedSlots;
      const iterations = countMapIterations(() => {
        for (let i = 0; i < 1000; i++) {
          const k = denied(`r${round}:${i}`, { name: 'h', limit: 1, window: '1h' }, 30_000);
          remember(memory, [k], T0);
          lookup(memory, [k], T0 + 1);
        }
      });
      return { slots: (memory.visitedSlots - before) / 1000, iterations };
    };
    work(0);
    const early = work(1);
    for (let round = 2; round < 20; round++) work(round);
    const late = work(20);
    expect(early.iterations + late.iterations).toBe(0);
    expect(early.slots).toBeGreaterThan(0);
    expect(late.slots).toBe(early.slots);
    expect(memory.size).toBe(1000);
  });
});

describe('the deny cache: what a hit answers', () => {
  const long = denied('k:long', { name: 'long', limit: 1, window: '1h' }, 30_000);
  const short = denied('k:short', { name: 'short', limit: 1, window: '1m' }, 2_000);
  const watch = denied('k:watch', { name: 'watch', limit: 1, window: '1m', shadow: true }, 5_000);
  const ok: Seen = {
    entry: { key: 'k:ok', policy: definePolicy({ name: 'ok', limit: 5, window: '1m' }), cost: 1 },
    verdict: { allowed: true, remaining: 3, resetMs: 10_000, retryAfterMs: 0 },
  };
  const row = (r: PolicyResult) => [r.policy, r.allowed, r.outcome, r.retryAfterMs, r.resetMs, r.cost];

  it('counts every wait and reset down from the moment remembered; an entry whose wait is over admits', () => {
    const memory = new DenialMemory(10, 60_000);
    remember(memory, [long, short, watch, ok], T0);
    expect(lookup(memory, [long, short, watch, ok], T0 + 1000)?.map(row)).toEqual([
      ['long', false, 'over_limit', 30_000 - 1000, 29_000, 1],
      ['short', false, 'over_limit', 1000, 1000, 1],
      ['watch', false, 'over_limit', 4000, 4000, 1],
      ['ok', true, 'allowed', 0, 9000, 1],
    ]);
    // At the instant the short wait ends, that entry admits.
    expect(lookup(memory, [long, short, watch, ok], T0 + 1999)?.[1]).toMatchObject({
      allowed: true,
      retryAfterMs: 0,
    });
    // Past the short wait: that entry might fit now, so it admits; the shadow one only counts down.
    expect(lookup(memory, [long, short, watch, ok], T0 + 6000, [1, 1, 1, 2])?.map(row)).toEqual([
      ['long', false, 'over_limit', 30_000 - 6000, 24_000, 1],
      ['short', true, 'allowed', 0, 0, 1],
      ['watch', false, 'over_limit', 0, 0, 1],
      ['ok', true, 'allowed', 0, 4000, 2],
    ]);
  });

  it('a lower cost on the denying entry is a miss', () => {
    const memory = new DenialMemory(10, 60_000);
    const k = denied('k', { name: 'long', limit: 1, window: '1h' }, 30_000, 2);
    remember(memory, [k], T0);
    expect(lookup(memory, [k], T0 + 1, [1])).toBeUndefined();
    expect(lookup(memory, [k], T0 + 1, [2])?.[0]).toMatchObject({ allowed: false, cost: 2 });
  });

  it('a shadow denial alone, or a wait of 1 ms, is never remembered', () => {
    const memory = new DenialMemory(10, 60_000);
    const s = denied('s', { name: 'watch', limit: 1, window: '1m', shadow: true }, 5_000);
    remember(memory, [s], T0);
    remember(memory, [denied('m', { name: 'm', limit: 1, window: '1m' }, 1)], T0);
    expect(memory.size).toBe(0);
    expect(lookup(memory, [s], T0)).toBeUndefined();
  });

  it('a denial that would end at once is not remembered, so it evicts nothing', () => {
    const memory = new DenialMemory(1, 60_000);
    const a = denied('a', { name: 'long', limit: 1, window: '1h' }, 30_000);
    remember(memory, [a], T0);
    // A wait bounded by a 1 ms window ends at the moment remembered.
    remember(
      memory,
      [denied('b', { name: 'long', algorithm: 'fixed-window', limit: 1, window: 1 }, 30_000)],
      T0,
    );
    expect(lookup(memory, [a], T0 + 1)?.[0]?.allowed).toBe(false);
  });

  it('a clock that went back is a miss, and forgets the entry', () => {
    const memory = new DenialMemory(10, 60_000);
    const k = denied('k', { name: 'long', limit: 1, window: '1h' }, 30_000);
    remember(memory, [k], T0);
    expect(lookup(memory, [k], T0 - 1)).toBeUndefined();
    expect(memory.size).toBe(0);
    expect(lookup(memory, [k], T0 + 1)).toBeUndefined();
  });

  it('remembering a key again replaces it; forgetting no keys keeps everything; forgetting every key empties it', () => {
    const memory = new DenialMemory(2, 60_000);
    const a = denied('a', { name: 'long', limit: 1, window: '1h' }, 30_000);
    const b = denied('b', { name: 'long', limit: 1, window: '1h' }, 30_000);
    remember(memory, [a], T0);
    remember(memory, [b], T0);
    remember(memory, [denied('a', { name: 'short', limit: 1, window: '1m' }, 2_000)], T0 + 10);
    expect(memory.size).toBe(2);
    expect(lookup(memory, [a], T0 + 20)?.[0]?.retryAfterMs).toBe(2000 - 10);
    expect(lookup(memory, [b], T0 + 20)?.[0]?.retryAfterMs).toBe(30_000 - 20);
    memory.forget([]);
    expect(memory.size).toBe(2);
    memory.forget(['b']);
    expect([memory.size, lookup(memory, [b], T0 + 20)]).toEqual([1, undefined]);
    memory.forget(['a', 'b']);
    expect([memory.size, lookup(memory, [a], T0 + 20)]).toEqual([0, undefined]);
  });

  it('remembers per key: a check of the denied key alone is answered, a check with a key never seen is not', () => {
    const memory = new DenialMemory(10, 60_000);
    remember(memory, [long, ok], T0);
    expect(lookup(memory, [long], T0 + 1000)?.map(row)).toEqual([
      ['long', false, 'over_limit', 29_000, 29_000, 1],
    ]);
    expect(lookup(memory, [ok], T0 + 1000)).toBeUndefined();
    expect(lookup(memory, [long, short], T0 + 1000)).toBeUndefined();
    // A reset of one key of the check: the check goes back to the store.
    memory.forget(['k:ok']);
    expect(lookup(memory, [long, ok], T0 + 1000)).toBeUndefined();
  });

  it('answers from a denial another step remembered (a lease take), by its own bounds', () => {
    const memory = new DenialMemory(10, 60_000);
    memory.remember('k:long', 1, T0, T0 + 30_000, long.verdict);
    expect(lookup(memory, [long], T0 + 1000)?.[0]).toMatchObject({ allowed: false, retryAfterMs: 29_000 });
    // And a denial the deny cache remembered is one the leases look up.
    remember(memory, [short], T0);
    expect(memory.lookup('k:short', 1, T0 + 1000)).toMatchObject({ untilMs: T0 + 2000, certain: true });
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
