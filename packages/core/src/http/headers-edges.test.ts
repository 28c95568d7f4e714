import { describe, expect, it } from 'vitest';
import type { HeaderFormat } from '../options/defaults.js';
import { decision, result } from './fixtures.test-util.js';
import { rateLimitHeaders, visibleResults } from './headers.js';
import { serializeSfList } from './structured-fields.js';

describe('rateLimitHeaders: the policy the single-policy formats describe', () => {
  const remaining = (d: ReturnType<typeof decision>) => rateLimitHeaders(d, 'draft-6')['RateLimit-Remaining'];
  const limitOf = (d: ReturnType<typeof decision>) => rateLimitHeaders(d, 'draft-6')['RateLimit-Limit'];

  it('among allowed policies, the one with the fewest units left; the first on a tie', () => {
    const few = result({ policy: 'few', limit: 10, remaining: 2 });
    const many = result({ policy: 'many', limit: 30, remaining: 9 });
    expect(remaining(decision([few, many]))).toBe('2');
    expect(remaining(decision([many, few]))).toBe('2');
    const tie = result({ policy: 'tie', limit: 40, remaining: 2 });
    expect(limitOf(decision([few, tie]))).toBe('10');
    expect(limitOf(decision([tie, few]))).toBe('40');
  });

  it('a denying policy wins over allowed ones, wherever it stands', () => {
    const ok = result({ policy: 'ok', limit: 10, remaining: 0 });
    const no = result({
      policy: 'no',
      limit: 30,
      allowed: false,
      outcome: 'over_limit',
      remaining: 5,
      retryAfterMs: 500,
    });
    expect(limitOf(decision([ok, no]))).toBe('30');
    expect(limitOf(decision([no, ok]))).toBe('30');
  });

  it('among denying policies, the longest wait; the first on a tie', () => {
    const deny = (policy: string, limit: number, retryAfterMs: number) =>
      result({ policy, limit, allowed: false, outcome: 'over_limit', remaining: 0, retryAfterMs });
    expect(limitOf(decision([deny('short', 10, 1000), deny('long', 30, 9000)]))).toBe('30');
    expect(limitOf(decision([deny('long', 30, 9000), deny('short', 10, 1000)]))).toBe('30');
    expect(limitOf(decision([deny('a', 10, 5000), deny('b', 30, 5000)]))).toBe('10');
    expect(limitOf(decision([deny('b', 30, 5000), deny('a', 10, 5000)]))).toBe('30');
  });

  it('leaves shadow policies out unless asked, also for the single-policy formats', () => {
    const enforced = result({ policy: 'enforced', limit: 10, remaining: 8 });
    const shadow = result({ policy: 'probe', limit: 5, remaining: 0, shadow: true });
    const d = decision([enforced, shadow]);
    expect(rateLimitHeaders(d, 'draft-7')).toEqual({
      'RateLimit-Policy': '10;w=20',
      RateLimit: 'limit=10, remaining=8, reset=1',
    });
    expect(rateLimitHeaders(d, 'draft-7', { shadowHeaders: true }).RateLimit).toBe(
      'limit=5, remaining=0, reset=1',
    );
    expect(visibleResults(d).map((r) => r.policy)).toEqual(['enforced']);
    expect(visibleResults(d, true).map((r) => r.policy)).toEqual(['enforced', 'probe']);
  });
});

describe('rateLimitHeaders for a decision without per-policy results', () => {
  const bare = (overrides: Partial<ReturnType<typeof decision>>) =>
    decision([], {
      policy: 'burst',
      limit: 20,
      remaining: 7,
      resetMs: 2500,
      outcome: 'allowed',
      ...overrides,
    });

  it('describes the deciding policy, without a window it does not know', () => {
    expect(rateLimitHeaders(bare({}), 'draft-10')).toEqual({
      'RateLimit-Policy': '"burst";q=20',
      RateLimit: '"burst";r=7;t=3',
    });
    expect(rateLimitHeaders(bare({}), 'draft-7')).toEqual({
      'RateLimit-Policy': '20',
      RateLimit: 'limit=20, remaining=7, reset=3',
    });
  });

  it('sends nothing without a policy, for an unavailable decision, or for a shadow one unless asked', () => {
    const formats: HeaderFormat[] = ['draft-10', 'draft-7', 'draft-6', 'legacy'];
    for (const format of formats) {
      expect(rateLimitHeaders(bare({ policy: undefined }), format)).toEqual({});
      expect(rateLimitHeaders(bare({ outcome: 'unavailable' }), format)).toEqual({});
      expect(rateLimitHeaders(bare({ shadowed: true }), format)).toEqual({});
      expect(
        Object.keys(rateLimitHeaders(bare({ shadowed: true }), format, { shadowHeaders: true })).length,
      ).toBeGreaterThan(0);
    }
    expect(rateLimitHeaders(bare({ shadowed: true }), 'draft-6', { shadowHeaders: true })).toEqual({
      'RateLimit-Policy': '20',
      'RateLimit-Limit': '20',
      'RateLimit-Remaining': '7',
      'RateLimit-Reset': '3',
    });
  });
});

describe('rateLimitHeaders: values at the edges', () => {
  it('caps r and t at the largest sf-integer, as the generic serialization would', () => {
    const huge = result({ policy: 'huge', limit: 1e18, remaining: 1e18, resetMs: 1e21 });
    const headers = rateLimitHeaders(decision([huge]), 'draft-10');
    expect(headers.RateLimit).toBe('"huge";r=999999999999999;t=999999999999999');
    expect(headers.RateLimit).toBe(
      serializeSfList([
        {
          value: 'huge',
          params: [
            ['r', 1e18],
            ['t', 1e18],
          ],
        },
      ]),
    );
  });

  it('rejects an unknown format by name', () => {
    const d = decision([result({ policy: 'a' })]);
    expect(() => rateLimitHeaders(d, 'draft-99' as HeaderFormat)).toThrow(
      new TypeError('unknown header format "draft-99"'),
    );
  });

  it('serializes only valid structured-field keys', () => {
    expect(serializeSfList([{ value: 'a', params: [['ab*_.-9', 1]] }])).toBe('"a";ab*_.-9=1');
    for (const key of ['1a', 'Ab', 'a b', '', '_a']) {
      expect(() => serializeSfList([{ value: 'a', params: [[key, 1]] }])).toThrow(TypeError);
    }
  });
});
