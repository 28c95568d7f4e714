/**
 * A counter asked once for all its occurrences answers each occurrence as counting them one after
 * the other would (the reference's order), whatever the hits and the units left.
 */
import { definePolicy, type StoreVerdict } from '@sluice/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { countersOf, MAX_COUNTERS_PER_REQUEST, spreadOver } from './counters.js';
import type { PlannedDescriptor } from './plan.js';
import { RlsTooLargeError } from './rls-types.js';

const LIMIT = 10;
const policy = definePolicy({ name: 'p', algorithm: 'fixed-window', limit: LIMIT, window: 60_000 });
const rule = {
  id: 'k',
  domain: 'd',
  name: '',
  replaces: [],
  unlimited: false,
  shadow: false,
  requestsPerUnit: LIMIT,
  unit: 'MINUTE',
  failMode: 'closed',
  policy,
} as const;
const planned = (hits: readonly number[]): PlannedDescriptor[] =>
  hits.map((h) => ({ rule, unlimited: false, hits: h, key: 'k' }));

/** What the store answers for one entry of cost max(1, total) when `left` units are left. */
function storeVerdict(left: number, total: number): { verdict: StoreVerdict; charged: boolean } {
  const cost = Math.max(1, total);
  const allowed = cost <= left;
  const charged = allowed && total > 0;
  return {
    verdict: {
      allowed,
      remaining: charged ? left - cost : left,
      resetMs: 1000,
      retryAfterMs: allowed ? 0 : 1000,
    },
    charged,
  };
}

describe('spreadOver', () => {
  it('each occurrence as counted in order: within the limit while the running sum fits, looks always', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: LIMIT }),
        fc.array(fc.integer({ min: 0, max: 4 }), { minLength: 1, maxLength: 8 }),
        (left, hits) => {
          const descriptors = planned(hits);
          const [counter] = countersOf(descriptors);
          if (counter === undefined) throw new Error('one counter expected');
          const { verdict, charged } = storeVerdict(left, counter.hits);
          const each = spreadOver(descriptors, counter, verdict, charged);
          let sum = 0;
          hits.forEach((h, j) => {
            sum += h;
            const fits = h === 0 || sum <= left;
            expect(each[j]?.allowed).toBe(fits);
            if (fits) expect(each[j]?.remaining).toBe(Math.max(0, left - sum));
          });
          // All or nothing: the store charged the counter only when every occurrence fits.
          expect(charged).toBe(counter.hits > 0 && each.every((v) => v.allowed));
        },
      ),
    );
  });
});

describe('countersOf', () => {
  it('the same key is one counter, its hits summed, occurrences in order', () => {
    const counters = countersOf(planned([1, 0, 2]));
    expect(counters).toHaveLength(1);
    expect(counters[0]).toMatchObject({ key: 'k', hits: 3, occurrences: [0, 1, 2] });
  });

  it(`more than ${MAX_COUNTERS_PER_REQUEST} distinct counters: RlsTooLargeError`, () => {
    const many = Array.from({ length: MAX_COUNTERS_PER_REQUEST + 1 }, (_, i) => ({
      rule,
      unlimited: false,
      hits: 1,
      key: `k${i}`,
    }));
    expect(() => countersOf(many)).toThrow(RlsTooLargeError);
    expect(() => countersOf(many.slice(1))).not.toThrow();
  });
});
