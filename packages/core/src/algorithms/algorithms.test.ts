import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../stores/memory-store.js';
import type { StoreEntry, StoreVerdict } from '../types.js';
import { gcraTicksPerUnit } from './gcra.js';
import {
  ALL_ALGORITHMS,
  checkPromises,
  makePolicy,
  memoryDecide,
  opsArb,
  policyArb,
  runInvariants,
  startTimeArb,
} from './testing.test-support.js';

/**
 * Time a fast-check property of this file may take: its runs take 1-3 s on a quiet 2-core machine
 * and several times that in a full parallel run, past the 5 s default.
 */
const PROPERTY_TIMEOUT_MS = 60_000;

const T0 = 1_764_400_000_000.25;

/** One-entry check on a fresh memory store with a settable clock. */
function single(algorithm: Parameters<typeof makePolicy>[0], limit: number, windowMs: number) {
  const { decide } = memoryDecide();
  const policy = makePolicy(algorithm, limit, windowMs);
  const entry = (cost = 1): StoreEntry => ({ key: 'k', policy, cost });
  return {
    consume: async (at: number, cost = 1) =>
      ((await decide([entry(cost)], 'consume', at)) as [StoreVerdict])[0],
    peek: async (at: number, cost = 1) => ((await decide([entry(cost)], 'peek', at)) as [StoreVerdict])[0],
  };
}

describe.each(ALL_ALGORITHMS)('%s invariants (MemoryStore, injected clock)', (algorithm) => {
  it(
    'keeps the design.md invariants over random histories, time going backwards included',
    async () => {
      await fc.assert(
        fc.asyncProperty(
          policyArb(algorithm, true).chain((policy) =>
            fc.tuple(fc.constant(policy), opsArb(policy, true), startTimeArb),
          ),
          async ([policy, ops, t0]) => {
            await runInvariants(memoryDecide().decide, policy, ops, t0, 'p');
          },
        ),
        { numRuns: 100 },
      );
    },
    PROPERTY_TIMEOUT_MS,
  );

  it('never lets keys share state: one store for all keys decides like one store per key', async () => {
    await fc.assert(
      fc.asyncProperty(
        policyArb(algorithm, true).chain((policy) =>
          fc.tuple(fc.constant(policy), opsArb(policy, false), startTimeArb),
        ),
        async ([policy, ops, t0]) => {
          const shared = await runInvariants(memoryDecide().decide, policy, ops, t0, 's');
          for (const key of [0, 1, 2]) {
            const own = memoryDecide().decide;
            let now = t0;
            for (let i = 0; i < ops.length; i++) {
              const op = ops[i]!;
              now += op.dtMs;
              if (op.key !== key) continue;
              const [v] = await own([{ key: `own:{k${key}}:x`, policy, cost: op.cost }], op.mode, now);
              expect(v).toEqual(shared[i]);
            }
          }
        },
      ),
      { numRuns: 40 },
    );
  });

  it('brings expired state back as a fresh, full key and drops it from memory', async () => {
    await fc.assert(
      fc.asyncProperty(
        policyArb(algorithm, true).chain((policy) =>
          fc.tuple(fc.constant(policy), opsArb(policy, false, 15), startTimeArb),
        ),
        async ([policy, ops, t0]) => {
          const { decide, store } = memoryDecide();
          let now = t0;
          let lastReset = 0;
          const entry = (cost: number): StoreEntry => ({ key: 'e', policy, cost });
          for (const op of ops) {
            now += op.dtMs;
            const [v] = (await decide([entry(op.cost)], op.mode, now)) as [StoreVerdict];
            lastReset = v.resetMs;
          }
          // The TTL is ceil(ms to full) + 1, so one more millisecond is past it.
          const later = now + Math.ceil(lastReset) + 2;
          const [peeked] = await decide([entry(1)], 'peek', later);
          expect(store.size).toBe(0);
          const fresh = memoryDecide().decide;
          expect(peeked).toEqual((await fresh([entry(1)], 'peek', later))[0]);
          expect(peeked).toEqual({ allowed: true, remaining: policy.limit, resetMs: 0, retryAfterMs: 0 });
        },
      ),
      { numRuns: 100 },
    );
  });

  it('keeps its promises: admitted retryAfterMs later, full resetMs later', async () => {
    await fc.assert(
      fc.asyncProperty(
        policyArb(algorithm, true).chain((policy) =>
          fc.tuple(fc.constant(policy), opsArb(policy, false, 15), startTimeArb),
        ),
        async ([policy, ops, t0]) => {
          await checkPromises(memoryDecide().decide, policy, ops, t0, 'k');
        },
      ),
      { numRuns: 200 },
    );
  });

  it('admits exactly `limit` units at one instant, then denies', async () => {
    await fc.assert(
      fc.asyncProperty(policyArb(algorithm), startTimeArb, async (policy, t0) => {
        const { decide } = memoryDecide();
        let admitted = 0;
        for (let i = 0; i < 2 * policy.limit + 2; i++) {
          const [v] = (await decide([{ key: 'x', policy, cost: 1 }], 'consume', t0)) as [StoreVerdict];
          if (v.allowed) admitted++;
          expect(v.remaining).toBe(Math.max(0, policy.limit - admitted));
        }
        expect(admitted).toBe(policy.limit);
      }),
      { numRuns: 100 },
    );
  });
});

describe.each(['token-bucket', 'gcra'] as const)('%s refill', (algorithm) => {
  it('earns back exactly one unit per intervalMs, fractional intervals included', async () => {
    await fc.assert(
      fc.asyncProperty(policyArb(algorithm), startTimeArb, async (policy, t0) => {
        const { decide } = memoryDecide();
        const entry: StoreEntry = { key: 'r', policy, cost: policy.limit };
        expect((await decide([entry], 'consume', t0))[0]?.allowed).toBe(true);
        for (let k = 0; k <= policy.limit; k++) {
          const [v] = (await decide([entry], 'peek', t0 + k * policy.intervalMs)) as [StoreVerdict];
          expect(v.remaining).toBe(k);
        }
      }),
      { numRuns: 200 },
    );
  });
});

describe('worked examples', () => {
  it('token bucket: lazy refill, fractional tokens, reset and retry-after', async () => {
    const b = single('token-bucket', 10, 1000); // 1 token / 100 ms
    expect(await b.consume(T0, 10)).toEqual({ allowed: true, remaining: 0, resetMs: 1000, retryAfterMs: 0 });
    expect(await b.peek(T0 + 250, 3)).toEqual({
      allowed: false,
      remaining: 2,
      resetMs: 750,
      retryAfterMs: 50,
    });
    expect(await b.consume(T0 + 250, 2.5)).toEqual({
      allowed: true,
      remaining: 0,
      resetMs: 1000,
      retryAfterMs: 0,
    });
    expect(await b.consume(T0 + 250, 11)).toEqual({
      allowed: false,
      remaining: 0,
      resetMs: 1000,
      retryAfterMs: -1,
    });
    // time going backwards: frozen, no refill
    expect((await b.peek(T0 - 5000)).remaining).toBe(0);
    expect((await b.peek(T0 + 100_000)).remaining).toBe(10);
  });

  it('GCRA: one unit per interval with a burst of limit', async () => {
    const g = single('gcra', 4, 2000); // 1 unit / 500 ms
    for (let i = 0; i < 4; i++) expect((await g.consume(T0)).allowed).toBe(true);
    const denied = await g.consume(T0);
    expect(denied.allowed).toBe(false);
    expect(denied.retryAfterMs).toBeCloseTo(500, 2);
    expect((await g.consume(T0 + 500)).allowed).toBe(true);
    expect((await g.peek(T0 + 500)).remaining).toBe(0);
    expect((await g.peek(T0 + 1500)).remaining).toBe(2);
    expect((await g.peek(T0 + 1500)).resetMs).toBeCloseTo(1000, 2);
    expect((await g.peek(T0 - 1000)).remaining).toBe(0);
  });

  it('sliding window: previous window weighted by overlap, no boundary double burst', async () => {
    const w = single('sliding-window', 10, 1000);
    const start = 1_764_400_000_000; // a window boundary (multiple of 1000)
    expect((await w.consume(start + 900, 10)).allowed).toBe(true);
    // just after the boundary the previous 10 still weigh 9.9: nothing left
    expect(await w.peek(start + 1010)).toEqual({
      allowed: false,
      remaining: 0,
      resetMs: 990,
      retryAfterMs: 90,
    });
    // half way through the next window: 5 left, full again at the end of it
    expect(await w.peek(start + 1500)).toEqual({
      allowed: true,
      remaining: 5,
      resetMs: 500,
      retryAfterMs: 0,
    });
    expect(await w.consume(start + 1500, 5)).toEqual({
      allowed: true,
      remaining: 0,
      resetMs: 1500,
      retryAfterMs: 0,
    });
    expect((await w.peek(start + 3000)).remaining).toBe(10);
  });

  it('fixed window: resets at the window boundary (the documented boundary burst)', async () => {
    const f = single('fixed-window', 10, 1000);
    const start = 1_764_400_000_000;
    expect(await f.consume(start + 990, 10)).toEqual({
      allowed: true,
      remaining: 0,
      resetMs: 10,
      retryAfterMs: 0,
    });
    expect(await f.consume(start + 995)).toEqual({
      allowed: false,
      remaining: 0,
      resetMs: 5,
      retryAfterMs: 5,
    });
    expect(await f.consume(start + 1000, 10)).toEqual({
      allowed: true,
      remaining: 0,
      resetMs: 1000,
      retryAfterMs: 0,
    });
    // back in time into the previous window: still the later window's count
    expect((await f.peek(start + 500)).remaining).toBe(0);
  });

  it('sliding log: exact rolling window', async () => {
    const l = single('sliding-log', 3, 1000);
    expect((await l.consume(T0)).remaining).toBe(2);
    expect((await l.consume(T0 + 100)).remaining).toBe(1);
    expect((await l.consume(T0 + 200)).remaining).toBe(0);
    expect(await l.peek(T0 + 300, 2)).toEqual({
      allowed: false,
      remaining: 0,
      resetMs: 900,
      retryAfterMs: 800,
    });
    expect((await l.consume(T0 + 1000)).allowed).toBe(true); // the first unit left the window
    expect((await l.consume(T0 + 1000)).allowed).toBe(false);
  });

  it('GCRA counts in decimal ticks with limit x ticks at most 2^40, so whole-tick sums stay exact', () => {
    for (const limit of [1, 100, 1099, 1100, 1e6, 2 ** 40, 2 ** 41, 9e15]) {
      const q = gcraTicksPerUnit(limit);
      expect(Number.isInteger(Math.log10(q))).toBe(true);
      expect(q).toBeLessThanOrEqual(1e9);
      if (q > 1) expect(limit * q).toBeLessThanOrEqual(2 ** 40);
      if (q < 1e9) expect(limit * q * 10).toBeGreaterThan(2 ** 40);
    }
  });

  it('rejects bad entries: duplicate keys, non-positive numbers, fractional sliding-log cost, a sliding-log limit past 1e15', async () => {
    const store = new MemoryStore({ clock: () => T0 });
    const p = makePolicy('token-bucket', 5, 1000);
    await expect(store.decide([{ key: 'a', policy: p, cost: 0 }], 'consume')).rejects.toThrow(/"cost"/);
    await expect(
      store.decide(
        [
          { key: 'a', policy: p, cost: 1 },
          { key: 'a', policy: p, cost: 1 },
        ],
        'consume',
      ),
    ).rejects.toThrow(/duplicate key/);
    const log = makePolicy('sliding-log', 5, 1000);
    await expect(store.decide([{ key: 'b', policy: log, cost: 1.5 }], 'consume')).rejects.toThrow(
      /whole number/,
    );
    await expect(
      store.decide([{ key: 'c', policy: { ...p, limit: Number.NaN }, cost: 1 }], 'consume'),
    ).rejects.toThrow(/"limit"/);
    await expect(
      store.decide([{ key: 'd', policy: { ...log, limit: 2e15 }, cost: 1 }], 'consume'),
    ).rejects.toThrow(/sliding-log "limit" must be at most 1000000000000000, got 2000000000000000/);
  });
});

describe('sliding log times in whole microseconds', () => {
  it('measures times to come from the microsecond the charge was stamped, so a key expires when its last unit leaves', async () => {
    // A clock value that is not the closest double to a whole microsecond (a found counterexample):
    // times to come measured from the raw clock came out a hair over the window, rounded up to
    // one more millisecond, and the key outlived its last unit.
    const policy = makePolicy('sliding-log', 15, 4_221_195);
    const { decide, store } = memoryDecide();
    const entry: StoreEntry = { key: 'e', policy, cost: 1 };
    const t = 1_799_998_474_121.078 + 0.469;
    const [charged] = (await decide([entry], 'consume', t)) as [StoreVerdict];
    expect(charged.resetMs).toBe(4_221_195);
    const [gone] = (await decide([entry], 'peek', t + 4_221_195)) as [StoreVerdict];
    expect(gone).toEqual({ allowed: true, remaining: 15, resetMs: 0, retryAfterMs: 0 });
    await decide([entry], 'peek', t + 4_221_195 + 2);
    expect(store.size).toBe(0);
  });
});

describe('GCRA times to come from the stamped arrival time', () => {
  it('reports the reset of a held key so that its TTL never outlives the report by more than its margin', async () => {
    // A found counterexample: limit 11 in 60 s (intervalMs 5454.54...). The charge's time
    // to full came out a hair over 60000 ms and rounded up to 60001; one ms later the same
    // state came out a hair under 59999, so the key outlived now + resetMs + 1.
    const policy = makePolicy('gcra', 11, 60_000);
    const { decide, store } = memoryDecide();
    const entry = (cost: number): StoreEntry => ({ key: 'e', policy, cost });
    const t = 1_700_000_000_000;
    const [charged] = (await decide([entry(11)], 'consume', t)) as [StoreVerdict];
    expect(charged).toEqual({ allowed: true, remaining: 0, resetMs: 60_000, retryAfterMs: 0 });
    const [denied] = (await decide([entry(1)], 'consume', t + 1)) as [StoreVerdict];
    expect(denied.allowed).toBe(false);
    expect(denied.resetMs).toBe(59_999);
    const [full] = (await decide([entry(1)], 'peek', t + 1 + 59_999)) as [StoreVerdict];
    expect(full).toEqual({ allowed: true, remaining: 11, resetMs: 0, retryAfterMs: 0 });
    await decide([entry(1)], 'peek', t + 1 + 59_999 + 2);
    expect(store.size).toBe(0);
  });

  it('counts down the reset of one state exactly as the clock moves on', async () => {
    await fc.assert(
      fc.asyncProperty(
        policyArb('gcra', true),
        startTimeArb,
        fc.array(fc.integer({ min: 0, max: 10_000_000 }), { minLength: 1, maxLength: 8 }),
        async (policy, t0, steps) => {
          const { decide } = memoryDecide();
          const entry: StoreEntry = { key: 'c', policy, cost: policy.limit };
          const [charged] = (await decide([entry], 'consume', t0)) as [StoreVerdict];
          // The reset is rounded up to a whole ms, so the state is full at the whole ms below.
          const fullAt = Math.floor(t0) + charged.resetMs;
          for (const step of steps.sort((a, b) => a - b)) {
            const [v] = (await decide([entry], 'peek', t0 + step)) as [StoreVerdict];
            expect(v.resetMs).toBe(Math.max(0, Math.ceil(fullAt - (t0 + step))));
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
