import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createLimiter } from '../limiter/index.js';
import { decision, result } from './fixtures.test-util.js';
import { rateLimitHeaders } from './headers.js';
import { serializeSfInteger, serializeSfList, serializeSfString } from './structured-fields.js';

const burst = result({ policy: 'burst', limit: 20, windowMs: 20_000, remaining: 19, resetMs: 1000 });

describe('rateLimitHeaders draft-10', () => {
  it('serializes one policy exactly as the design example', () => {
    expect(rateLimitHeaders(decision([burst]), 'draft-10')).toEqual({
      'RateLimit-Policy': '"burst";q=20;w=20',
      RateLimit: '"burst";r=19;t=1',
    });
  });

  it('is the default format', () => {
    expect(rateLimitHeaders(decision([burst]))).toEqual(rateLimitHeaders(decision([burst]), 'draft-10'));
  });

  it('lists every applied policy in order, joined canonically by ", "', () => {
    const payments = result({
      policy: 'payments',
      limit: 20,
      windowMs: 10_000,
      remaining: 15,
      resetMs: 2500,
    });
    const transfers = result({
      policy: 'transfers',
      algorithm: 'sliding-window',
      limit: 3,
      windowMs: 60_000,
      remaining: 0,
      resetMs: 59_001,
      allowed: false,
      outcome: 'over_limit',
      retryAfterMs: 40_000,
    });
    expect(rateLimitHeaders(decision([payments, transfers]))).toEqual({
      'RateLimit-Policy': '"payments";q=20;w=10, "transfers";q=3;w=60',
      RateLimit: '"payments";r=15;t=3, "transfers";r=0;t=60',
    });
  });

  it('rounds w and t up, w at least 1, and never emits negative or fractional values', () => {
    const odd = result({ policy: 'p', limit: 5, windowMs: 500, remaining: 2.7, resetMs: 1001 });
    expect(rateLimitHeaders(decision([odd]))).toEqual({
      'RateLimit-Policy': '"p";q=5;w=1',
      RateLimit: '"p";r=2;t=2',
    });
    const zero = result({ policy: 'p', limit: 5, windowMs: 0, remaining: -1, resetMs: -5 });
    expect(rateLimitHeaders(decision([zero]))).toEqual({
      'RateLimit-Policy': '"p";q=5;w=1',
      RateLimit: '"p";r=0;t=0',
    });
  });

  it('leaves shadow policies out unless asked', () => {
    const shadow = result({
      policy: 'probe',
      shadow: true,
      allowed: false,
      outcome: 'over_limit',
      remaining: 0,
    });
    expect(rateLimitHeaders(decision([burst, shadow]))).toEqual({
      'RateLimit-Policy': '"burst";q=20;w=20',
      RateLimit: '"burst";r=19;t=1',
    });
    expect(rateLimitHeaders(decision([shadow]))).toEqual({});
    expect(
      rateLimitHeaders(decision([burst, shadow]), 'draft-10', { shadowHeaders: true })['RateLimit'],
    ).toBe('"burst";r=19;t=1, "probe";r=0;t=1');
  });

  it('leaves out policies the store could not decide', () => {
    const failed = result({ policy: 'strict', outcome: 'unavailable', allowed: false });
    expect(rateLimitHeaders(decision([failed]))).toEqual({});
    expect(rateLimitHeaders(decision([burst, failed]))['RateLimit']).toBe('"burst";r=19;t=1');
  });

  it('returns nothing for format false or a decision without policies', () => {
    expect(rateLimitHeaders(decision([burst]), false)).toEqual({});
    expect(rateLimitHeaders(decision([]))).toEqual({});
  });

  it('escapes quotes and backslashes in policy names', () => {
    const odd = result({ policy: 'a"b\\c' });
    expect(rateLimitHeaders(decision([odd]))['RateLimit']).toBe('"a\\"b\\\\c";r=19;t=1');
  });

  it('describes the deciding policy when a decision carries no results', () => {
    const d = decision([], { policy: 'x', limit: 10, remaining: 3, resetMs: 4500, outcome: 'allowed' });
    expect(rateLimitHeaders(d)).toEqual({ 'RateLimit-Policy': '"x";q=10', RateLimit: '"x";r=3;t=5' });
  });
});

describe('rateLimitHeaders single-policy formats', () => {
  const slow = result({ policy: 'slow', limit: 100, windowMs: 3_600_000, remaining: 50, resetMs: 1_800_000 });
  const tight = result({ policy: 'tight', limit: 10, windowMs: 60_000, remaining: 2, resetMs: 45_500 });

  it('draft-7 describes the policy with the fewest units left', () => {
    expect(rateLimitHeaders(decision([slow, tight]), 'draft-7')).toEqual({
      'RateLimit-Policy': '10;w=60',
      RateLimit: 'limit=10, remaining=2, reset=46',
    });
  });

  it('draft-7 of the design example', () => {
    expect(rateLimitHeaders(decision([burst]), 'draft-7')).toEqual({
      'RateLimit-Policy': '20;w=20',
      RateLimit: 'limit=20, remaining=19, reset=1',
    });
  });

  it('draft-6 sends the three fields and the policy', () => {
    expect(rateLimitHeaders(decision([burst]), 'draft-6')).toEqual({
      'RateLimit-Policy': '20;w=20',
      'RateLimit-Limit': '20',
      'RateLimit-Remaining': '19',
      'RateLimit-Reset': '1',
    });
  });

  it('describes the denying policy with the longest wait', () => {
    const a = result({
      policy: 'a',
      allowed: false,
      outcome: 'over_limit',
      remaining: 0,
      retryAfterMs: 5000,
    });
    const b = result({
      policy: 'b',
      limit: 3,
      allowed: false,
      outcome: 'over_limit',
      remaining: 0,
      retryAfterMs: 9000,
      resetMs: 9000,
    });
    expect(rateLimitHeaders(decision([tight, a, b]), 'draft-6')['RateLimit-Limit']).toBe('3');
  });

  it('legacy uses epoch seconds for the reset, rounded up', () => {
    expect(rateLimitHeaders(decision([tight]), 'legacy', { nowMs: 1_700_000_000_000 })).toEqual({
      'X-RateLimit-Limit': '10',
      'X-RateLimit-Remaining': '2',
      'X-RateLimit-Reset': '1700000046',
    });
  });

  it('legacy reads the clock when no time is given', () => {
    const before = Math.floor(Date.now() / 1000);
    const reset = Number(rateLimitHeaders(decision([tight]), 'legacy')['X-RateLimit-Reset']);
    expect(reset).toBeGreaterThanOrEqual(before + 45);
    expect(reset).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + 46);
  });
});

describe('structured fields', () => {
  it('rejects characters an sf-string cannot carry', () => {
    expect(() => serializeSfString('caf\u00e9')).toThrow(TypeError);
    expect(() => serializeSfString('a\nb')).toThrow(TypeError);
  });

  it('clamps and truncates integers', () => {
    expect(serializeSfInteger(1e20)).toBe('999999999999999');
    expect(serializeSfInteger(-0)).toBe('0');
    expect(serializeSfInteger(2.9)).toBe('2');
    expect(serializeSfInteger(Number.NaN)).toBe('0');
  });

  /** A small RFC 9651 parser for List of String Items with Integer params, to round-trip against. */
  function parseList(text: string): { value: string; params: [string, number][] }[] {
    const out: { value: string; params: [string, number][] }[] = [];
    let i = 0;
    while (i < text.length) {
      expect(text[i]).toBe('"');
      i++;
      let value = '';
      while (text[i] !== '"') {
        if (text[i] === '\\') i++;
        value += text[i];
        i++;
      }
      i++;
      const params: [string, number][] = [];
      while (text[i] === ';') {
        const m = /^;([a-z*][a-z0-9_\-.*]*)=(-?[0-9]{1,15})/.exec(text.slice(i))!;
        params.push([m[1]!, Number(m[2])]);
        i += m[0].length;
      }
      out.push({ value, params });
      if (i < text.length) {
        expect(text.slice(i, i + 2)).toBe(', ');
        i += 2;
      }
    }
    return out;
  }

  it('round-trips lists of printable-ASCII strings with integer params', () => {
    const printable = fc.string({
      unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
    });
    const item = fc.record({
      value: printable,
      params: fc.array(fc.tuple(fc.constantFrom('q', 'w', 'r', 't'), fc.nat({ max: 999_999_999_999_999 }))),
    });
    fc.assert(
      fc.property(fc.array(item, { minLength: 1, maxLength: 5 }), (items) => {
        expect(parseList(serializeSfList(items))).toEqual(items);
      }),
    );
  });
});

describe('legacy X-RateLimit-Reset inside one fixed window', () => {
  it('stays the window end for every response of the window, however late the headers are built', async () => {
    // A 60 s window ends on a whole minute; the headers are built 0-250 ms after the decision
    // (the request path between the check and the response), on a clock up to 250 ms off.
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 59_000 }),
        fc.integer({ min: -250, max: 250 }),
        async (intoWindowMs, lateMs) => {
          const windowStartMs = 1_700_000_040_000; // a multiple of 60 000
          const clock = () => windowStartMs + intoWindowMs;
          const limiter = createLimiter({
            policies: [{ name: 'fw', algorithm: 'fixed-window', limit: 100, window: '1m' }],
            clock,
          });
          const decided = await limiter.check({ identity: 'a' });
          const headers = rateLimitHeaders(decided, 'legacy', { nowMs: clock() + lateMs });
          expect(headers['X-RateLimit-Reset']).toBe(String((windowStartMs + 60_000) / 1000));
        },
      ),
    );
  });

  it('keeps rounding other algorithms up to the second of their reset', () => {
    const bucket = result({
      policy: 'tb',
      algorithm: 'token-bucket',
      limit: 10,
      remaining: 9,
      resetMs: 1500,
    });
    expect(rateLimitHeaders(decision([bucket]), 'legacy', { nowMs: 1_700_000_000_000 })).toMatchObject({
      'X-RateLimit-Reset': '1700000002',
    });
  });
});

describe('sliding-window reset', () => {
  it('says at most two windows (the bound the core README documents)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 0, max: 30_000 }), { minLength: 1, maxLength: 30 }),
        async (gaps) => {
          let now = 1_700_000_000_000;
          const limiter = createLimiter({
            policies: [{ name: 'sw', algorithm: 'sliding-window', limit: 5, window: '1m' }],
            clock: () => now,
          });
          for (const gap of gaps) {
            now += gap;
            const headers = rateLimitHeaders(await limiter.check({ identity: 'a' }), 'draft-10', {
              nowMs: now,
            });
            const t = Number(/t=(\d+)/.exec(headers.RateLimit ?? '')?.[1]);
            expect(t).toBeLessThanOrEqual(120);
          }
        },
      ),
    );
  });
});
