// Edge cases of each algorithm's arithmetic at the bounds its comparisons and clamps draw (pure evaluations, injected time).
import { describe, expect, it } from 'vitest';
import { definePolicy } from '../policy/define-policy.js';
import { fixedWindow } from './fixed-window.js';
import { gcra, gcraTicksPerUnit } from './gcra.js';
import { type AlgorithmModule, defineAlgorithm } from './module.js';
import { ALGORITHM_LIST, ALGORITHMS, type Algorithm } from './registry.js';
import { LOG_CUM_MAX, type SlidingLogState, slidingLog } from './sliding-log.js';
import { type SlidingWindowState, slidingWindow } from './sliding-window.js';
import { tokenBucket } from './token-bucket.js';
import type { AlgorithmParams } from './types.js';

/** 2^-10 ms: the margin lua/sliding-window.lua adds to an instant that rounds a hair early. */
const MARGIN_MS = 0.0009765625;

/** Above 2^24 a limit plus EPS (1e-9) rounds back to the limit itself. */
const BIG_LIMIT = 2 ** 24;

function params(
  limit: number,
  windowMs: number,
  cost: number,
  intervalMs = windowMs / limit,
): AlgorithmParams {
  return { limit, windowMs, intervalMs, cost };
}

describe('the quota comparison is inclusive at any limit', () => {
  it.each([
    ['fixed window', fixedWindow],
    ['sliding window', slidingWindow],
  ] as const)('%s: a fresh key admits a cost of the whole limit 2^24', (_name, module) => {
    const v = (module as AlgorithmModule<string, unknown>).evaluate(
      undefined,
      1_000,
      params(BIG_LIMIT, 60_000, BIG_LIMIT),
    );
    expect(v.allowed).toBe(true);
    expect(v.retryAfterMs).toBe(0);
    expect(v.remaining).toBe(BIG_LIMIT);
    expect(v.chargedRemaining).toBe(0);
  });
});

describe('sliding window waits', () => {
  const win = 1_764_400_000_000;

  it('reports 2^-10 ms later an instant that rounds a hair early, so waiting it admits', () => {
    // limit 5, cost 2, current 1, previous 3: room 2 once the previous weighs 2, at 1/3 of the window.
    const state: SlidingWindowState = { startMs: win, current: 1, previous: 3 };
    const p = params(5, 1_000, 2);
    const now = win + 56.75;
    const rawAt = win + 1_000 * (1 - 2 / 3);
    const v = slidingWindow.evaluate(state, now, p);
    expect(v.allowed).toBe(false);
    // The rounded instant itself has no room yet: 3 * (1 - f) + 1 + 2 is still above 5 + EPS.
    expect(slidingWindow.evaluate(state, rawAt, p).allowed).toBe(false);
    expect(v.retryAfterMs).toBe(rawAt + MARGIN_MS - now);
    expect(slidingWindow.evaluate(state, now + v.retryAfterMs, p).allowed).toBe(true);
  });

  it('reports an exact instant unchanged: half the previous window gone, no margin', () => {
    // limit 2^24 (limit + EPS rounds to the limit), cost 2^23, previous 2^24: room at half the window.
    const state: SlidingWindowState = { startMs: win, current: 0, previous: BIG_LIMIT };
    const p = params(BIG_LIMIT, 1_000, BIG_LIMIT / 2);
    const v = slidingWindow.evaluate(state, win + 100, p);
    expect(v.allowed).toBe(false);
    expect(v.retryAfterMs).toBe(400);
    expect(slidingWindow.evaluate(state, win + 500, p).allowed).toBe(true);
    expect(slidingWindow.evaluate(state, win + 499.999, p).allowed).toBe(false);
  });

  it('waits for the window end, no margin, when current = limit - cost fits there (fractional units)', () => {
    // limit - current - cost rounds below 0 although current is limit - cost: the current window's
    // units alone fit with the cost, so the room comes when the previous window stops weighing.
    const limit = 1e7;
    const current = 9_563_568.8;
    const cost = 436_431.2;
    expect(limit - current - cost).toBeLessThan(0);
    expect(current).toBe(limit - cost);
    expect(current + cost).toBeLessThanOrEqual(limit + 1e-9);
    const state: SlidingWindowState = { startMs: 0, current, previous: 2 };
    const p = params(limit, 1_000, cost);
    const v = slidingWindow.evaluate(state, 500, p);
    expect(v.allowed).toBe(false);
    expect(v.retryAfterMs).toBe(500);
    expect(slidingWindow.evaluate(state, 1_000, p).allowed).toBe(true);
  });

  it('adds the margin at the window end when current + cost rounds above the limit there (fractional limit)', () => {
    // current = limit - cost exactly, yet current + cost rounds above limit + EPS: at the window
    // end the current window weighs fully, so the room comes 2^-10 ms after it.
    const limit = 105_855_093.45598401;
    const cost = 13_538_273.82860341;
    const current = limit - cost;
    expect(current + cost).toBeGreaterThan(limit + 1e-9);
    const state: SlidingWindowState = { startMs: 0, current, previous: 2 };
    const p = params(limit, 1_000, cost);
    const v = slidingWindow.evaluate(state, 500, p);
    expect(v.allowed).toBe(false);
    expect(slidingWindow.evaluate(state, 1_000, p).allowed).toBe(false);
    expect(v.retryAfterMs).toBe(500 + MARGIN_MS);
    expect(slidingWindow.evaluate(state, 500 + v.retryAfterMs, p).allowed).toBe(true);
  });
});

describe('GCRA ticks and drain', () => {
  it('counts 10^k ticks per unit with limit x ticks at most 2^40, never fewer than 1 tick per unit', () => {
    expect(gcraTicksPerUnit(2 ** 40 / 10)).toBe(10); // limit x 10 is 2^40 exactly: allowed
    expect(gcraTicksPerUnit(2 ** 40 / 1e9)).toBe(1e9);
    expect(gcraTicksPerUnit(2 ** 40)).toBe(1);
    expect(gcraTicksPerUnit(2 ** 41)).toBe(1);
    expect(gcraTicksPerUnit(9e15)).toBe(1);
  });

  it('charges one unit for a cost of 1 beyond 2^40 units of burst', () => {
    const limit = 2 ** 41;
    const v = gcra.evaluate(undefined, 0, params(limit, limit, 1, 1));
    expect(v.allowed).toBe(true);
    expect(v.chargedRemaining).toBe(limit - 1);
    expect(v.charge()).toEqual({ used: 1, tsMs: 0 });
  });

  it('charges a tenth of a unit as one tick at a limit of exactly 2^40 / 10 ticks', () => {
    const limit = 2 ** 40 / 10;
    const v = gcra.evaluate(undefined, 0, params(limit, limit, 0.1, 1));
    expect(v.charge()).toEqual({ used: 0.1, tsMs: 0 });
    expect(v.chargedRemaining).toBe(Math.floor(limit - 0.1));
  });

  it('reads a key drained to exactly nothing owed as a fresh key', () => {
    const p = params(10, 10_000, 1, 1_000);
    for (const now of [1_000, 5_000]) {
      const drained = gcra.evaluate({ used: 1, tsMs: 0 }, now, p);
      const fresh = gcra.evaluate(undefined, now, p);
      const { charge: c1, ...a } = drained;
      const { charge: c2, ...b } = fresh;
      expect(a).toEqual(b);
      expect(a.resetMs).toBe(0);
      expect(c1()).toEqual(c2());
      expect(c1()).toEqual({ used: 1, tsMs: now });
    }
  });
});

describe('token bucket refill and debt', () => {
  it('is full once it has waited (limit - tokens) * intervalMs, whatever the rounding of the sum', () => {
    // 0.06 + (1 - 0.06) * 10 / 10 is 0.9999999999999999 in doubles; the wait itself fills the bucket.
    const wait = (1 - 0.06) * 10;
    const v = tokenBucket.evaluate({ tokens: 0.06, tsMs: 0 }, wait, params(1, 10, 1, 10));
    expect(v.resetMs).toBe(0);
    expect(v.remaining).toBe(1);
    expect(v.charge()).toEqual({ tokens: 0, tsMs: wait });
  });

  it('earns a debt back before it counts the bucket full', () => {
    // A debt of 2^-11 token (within the slack of 0.001 at 1 ms per token), then 1 ms: 1 - 2^-11 tokens.
    const v = tokenBucket.evaluate({ tokens: -(2 ** -11), tsMs: 0 }, 1, params(1, 1, 1, 1));
    expect(v.resetMs).toBe(2 ** -11);
    expect(v.charge()).toEqual({ tokens: -(2 ** -11), tsMs: 1 });
  });

  it('forgives a debt beyond its slack down to the slack, still owed', () => {
    // limit 10, 1000 ms per token: slack 1e-6 token. A debt of 1 token left under other limits.
    const v = tokenBucket.evaluate({ tokens: -1, tsMs: 0 }, 0, params(10, 10_000, 1, 1_000));
    expect(v.allowed).toBe(false);
    expect(v.retryAfterMs).toBeCloseTo(1_000.001, 6);
    expect(v.resetMs).toBeCloseTo(10_000.001, 6);
  });
});

describe('sliding log records', () => {
  const p = params(10, 1_000, 1);

  it('stamps a charge at the time rounded to the nearest microsecond', () => {
    expect(slidingLog.evaluate(undefined, 0.0006, p).charge().times).toEqual([1]);
    expect(slidingLog.evaluate(undefined, 0.0004, p).charge().times).toEqual([0]);
  });

  it('stamps a later charge at its own time, and merges charges of one instant into one record', () => {
    const first = slidingLog.evaluate(undefined, 0, p).charge();
    const same = slidingLog.evaluate(first, 0, p).charge();
    expect(same).toEqual({ base: 0, times: [0], cums: [2] });
    const later = slidingLog.evaluate(same, 100, p);
    expect(later.chargedResetMs).toBe(1_000);
    expect(later.charge()).toEqual({ base: 0, times: [0, 100_000], cums: [2, 3] });
  });

  it('rebases the units to 0 when they reach LOG_CUM_MAX, keeping the live records', () => {
    const state: SlidingLogState = {
      base: LOG_CUM_MAX - 10,
      times: [1_000, 2_000],
      cums: [LOG_CUM_MAX - 8, LOG_CUM_MAX - 5],
    };
    const v = slidingLog.evaluate(state, 500, params(10, 1_000, 5));
    expect(v.allowed).toBe(true);
    const next = v.charge(); // units up to LOG_CUM_MAX exactly
    expect(next).toEqual({ base: 0, times: [1_000, 2_000, 500_000], cums: [2, 5, 10] });
    expect(slidingLog.evaluate(next, 500, params(10, 1_000, 1)).remaining).toBe(0);
    expect(slidingLog.evaluate(next, 1_001.5, params(10, 1_000, 1)).remaining).toBe(2);
  });

  it('keeps the units as they are below LOG_CUM_MAX', () => {
    const state: SlidingLogState = {
      base: LOG_CUM_MAX - 10,
      times: [1_000, 2_000],
      cums: [LOG_CUM_MAX - 8, LOG_CUM_MAX - 5],
    };
    const next = slidingLog.evaluate(state, 500, params(10, 1_000, 4)).charge();
    expect(next).toEqual({
      base: LOG_CUM_MAX - 10,
      times: [1_000, 2_000, 500_000],
      cums: [LOG_CUM_MAX - 8, LOG_CUM_MAX - 5, LOG_CUM_MAX - 1],
    });
  });
});

describe('module facts match the arithmetic', () => {
  it('resets on a window boundary exactly where every unit comes back at once on one', () => {
    const windowMs = 1_000;
    const limit = 4;
    const t0 = 250;
    for (const module of ALGORITHM_LIST) {
      const p = { ...params(limit, windowMs, limit), slotId: 'slot' };
      const state = module.evaluate(undefined, t0, p).charge();
      const { resetMs } = module.evaluate(state, t0, params(limit, windowMs, 1));
      const backAt = t0 + resetMs;
      const onBoundary = backAt % windowMs === 0;
      const noneBefore = module.evaluate(state, backAt - 1, params(limit, windowMs, 1)).remaining === 0;
      expect(module.windows.resetsOnBoundary, module.name).toBe(onBoundary && noneBefore);
    }
  });

  it('keeps a state of a few numbers in MemoryStore number table; the sliding log and the slots as objects', () => {
    const kinds: Record<Algorithm, 'numbers' | 'object'> = {
      'token-bucket': 'numbers',
      gcra: 'numbers',
      'sliding-window': 'numbers',
      'fixed-window': 'numbers',
      'sliding-log': 'object',
      concurrency: 'object',
    };
    for (const module of ALGORITHM_LIST) expect(module.state.kind, module.name).toBe(kinds[module.name]);
    expect(ALGORITHMS['fixed-window'].state.kind).toBe('numbers');
  });

  it('defineAlgorithm hands back the module itself, frozen', () => {
    const module = { ...fixedWindow, name: 'copy' as const };
    const defined = defineAlgorithm(module);
    expect(defined).toBe(module);
    expect(Object.isFrozen(defined)).toBe(true);
  });

  it('a bucket policy without a burst keeps its window exactly, at any limit', () => {
    // (limit * 60000) / limit is not 60000 in doubles for this limit.
    const limit = 1_000_000_000_000_014;
    expect((limit * 60_000) / limit).not.toBe(60_000);
    for (const algorithm of ['token-bucket', 'gcra'] as const) {
      const policy = definePolicy({ name: 'p', algorithm, limit, window: '1m' });
      expect(policy.windowMs).toBe(60_000);
      expect(policy.limit).toBe(limit);
    }
  });
});
