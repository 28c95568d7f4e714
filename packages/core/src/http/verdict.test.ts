import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decision, result } from './fixtures.test-util.js';
import { QUOTA_EXCEEDED_TYPE, quotaExceededProblem } from './problem.js';
import { retryAfterSeconds } from './retry-after.js';
import { toHttpVerdict } from './verdict.js';

const over = (policy: string, retryAfterMs: number, extra = {}) =>
  result({
    policy,
    allowed: false,
    outcome: 'over_limit',
    remaining: 0,
    retryAfterMs,
    resetMs: retryAfterMs,
    ...extra,
  });

describe('retryAfterSeconds', () => {
  it('rounds up to whole seconds', () => {
    expect(retryAfterSeconds(decision([over('a', 1001)]))).toBe(2);
    expect(retryAfterSeconds(decision([over('a', 3000)]))).toBe(3);
  });

  it('is at least 1', () => {
    expect(retryAfterSeconds(decision([over('a', 0)]))).toBe(1);
    expect(retryAfterSeconds(decision([over('a', 1)]))).toBe(1);
  });

  it('takes the longest wait among denying policies, ignoring shadow ones', () => {
    const d = decision([over('a', 2000), over('b', 7500), over('s', 99_000, { shadow: true })]);
    expect(retryAfterSeconds(d)).toBe(8);
  });

  it('is a whole number >= 1 covering every denying wait, and never more than a second beyond the longest', () => {
    fc.assert(
      fc.property(fc.array(fc.nat({ max: 86_400_000 }), { minLength: 1, maxLength: 5 }), (waits) => {
        const seconds = retryAfterSeconds(decision(waits.map((ms, i) => over(`p${i}`, ms))));
        expect(Number.isInteger(seconds)).toBe(true);
        expect(seconds).toBeGreaterThanOrEqual(1);
        const longest = Math.max(...waits);
        expect(seconds * 1000).toBeGreaterThanOrEqual(longest);
        expect(seconds * 1000 - longest).toBeLessThan(longest === 0 ? 1001 : 1000);
      }),
    );
  });

  it('falls back to the decision when no result denies', () => {
    expect(
      retryAfterSeconds(decision([], { outcome: 'over_limit', allowed: false, retryAfterMs: 4200 })),
    ).toBe(5);
  });
});

describe('toHttpVerdict', () => {
  const ok = result({ policy: 'burst' });

  it('passes allowed decisions with their headers and no body', () => {
    const headers = { 'RateLimit-Policy': '"burst";q=20;w=20', RateLimit: '"burst";r=19;t=1' };
    expect(toHttpVerdict(decision([ok]))).toEqual({
      action: 'pass',
      status: 200,
      headers,
      onLimitedHeaders: headers,
      contentType: undefined,
      body: undefined,
      bodyText: undefined,
    });
  });

  it('denies over-limit decisions with 429, Retry-After, problem+json and the exact body', () => {
    const payments = result({ policy: 'payments', remaining: 15, resetMs: 2500 });
    const transfers = over('transfers', 40_000, { limit: 3, windowMs: 60_000, resetMs: 60_000 });
    const verdict = toHttpVerdict(decision([payments, transfers]));
    expect(verdict.action).toBe('deny');
    expect(verdict.status).toBe(429);
    expect(verdict.headers).toEqual({
      'RateLimit-Policy': '"payments";q=20;w=20, "transfers";q=3;w=60',
      RateLimit: '"payments";r=15;t=3, "transfers";r=0;t=60',
      'Retry-After': '40',
      'Content-Type': 'application/problem+json',
      'Cache-Control': 'no-store',
    });
    expect(verdict.body).toEqual({
      type: 'https://iana.org/assignments/http-problem-types#quota-exceeded',
      title: 'Quota Exceeded',
      status: 429,
      'violated-policies': ['transfers'],
      error: 'rate limit exceeded',
      policy: 'transfers',
      retry_after_seconds: 40,
    });
  });

  it('carries the body as sent and, for onLimited, the same headers in the same order without Content-Type', () => {
    const transfers = over('transfers', 40_000, { limit: 3, windowMs: 60_000, resetMs: 60_000 });
    const verdict = toHttpVerdict(decision([result({ policy: 'payments' }), transfers]));
    expect(verdict.contentType).toBe('application/problem+json');
    expect(verdict.bodyText).toBe(
      '{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Quota Exceeded",' +
        '"status":429,"violated-policies":["transfers"],"error":"rate limit exceeded","policy":"transfers",' +
        '"retry_after_seconds":40}',
    );
    expect(verdict.bodyText).toBe(JSON.stringify(verdict.body));
    expect(Object.entries(verdict.onLimitedHeaders)).toEqual(
      Object.entries(verdict.headers).filter(([name]) => name !== 'Content-Type'),
    );
    expect(Object.keys(verdict.onLimitedHeaders)).toEqual([
      'RateLimit-Policy',
      'RateLimit',
      'Retry-After',
      'Cache-Control',
    ]);
  });

  it('sends exactly JSON.stringify of the body, for any decision, however often the same body recurs', () => {
    const arbResult = fc
      .record({
        policy: fc.constantFrom('a', 'b', 'burst', 'q"x'),
        allowed: fc.boolean(),
        outcome: fc.constantFrom('allowed' as const, 'over_limit' as const, 'unavailable' as const),
        retryAfterMs: fc.nat({ max: 100_000 }),
        shadow: fc.boolean(),
      })
      .map((r) => result(r));
    fc.assert(
      fc.property(
        fc.array(arbResult, { maxLength: 4 }),
        fc.nat({ max: 100_000 }),
        (results, retryAfterMs) => {
          for (const d of [
            decision(results),
            decision(results, { outcome: 'over_limit', allowed: false, retryAfterMs }),
          ]) {
            for (let i = 0; i < 2; i++) {
              const v = toHttpVerdict(d);
              expect(v.bodyText).toBe(v.body === undefined ? undefined : JSON.stringify(v.body));
            }
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('names every violated policy and the one with the longest wait', () => {
    const body = quotaExceededProblem(decision([over('a', 9000), over('b', 12_000), over('c', 3000)]));
    expect(body['violated-policies']).toEqual(['a', 'b', 'c']);
    expect(body.policy).toBe('b');
    expect(body.retry_after_seconds).toBe(12);
    expect(body.type).toBe(QUOTA_EXCEEDED_TYPE);
  });

  it('keeps Retry-After and retry_after_seconds equal', () => {
    for (const ms of [1, 999, 1000, 1001, 59_999, 3_600_001]) {
      const v = toHttpVerdict(decision([over('a', ms)]));
      expect(v.headers['Retry-After']).toBe(String(v.body?.retry_after_seconds));
    }
  });

  it('answers 503 for a closed failure, without Retry-After', () => {
    const failed = result({ policy: 'strict', allowed: false, outcome: 'unavailable', remaining: 0 });
    const verdict = toHttpVerdict(decision([failed]));
    expect(verdict).toEqual({
      action: 'deny',
      status: 503,
      headers: { 'Content-Type': 'application/problem+json', 'Cache-Control': 'no-store' },
      onLimitedHeaders: { 'Cache-Control': 'no-store' },
      contentType: 'application/problem+json',
      body: {
        type: 'about:blank',
        title: 'Service Unavailable',
        status: 503,
        error: 'rate limiter unavailable',
      },
      bodyText:
        '{"type":"about:blank","title":"Service Unavailable","status":503,"error":"rate limiter unavailable"}',
    });
  });

  it('marks every 429 and 503 Cache-Control: no-store, and no pass', () => {
    const failed = result({ policy: 'strict', allowed: false, outcome: 'unavailable', remaining: 0 });
    for (const headers of ['draft-10', 'draft-7', 'draft-6', 'legacy', false] as const) {
      expect(toHttpVerdict(decision([over('a', 1000)]), { headers, nowMs: 0 }).headers['Cache-Control']).toBe(
        'no-store',
      );
      expect(toHttpVerdict(decision([failed]), { headers, nowMs: 0 }).headers['Cache-Control']).toBe(
        'no-store',
      );
      expect(toHttpVerdict(decision([ok]), { headers, nowMs: 0 }).headers['Cache-Control']).toBeUndefined();
    }
  });

  it('passes an open failure', () => {
    const failed = result({ policy: 'lenient', allowed: true, outcome: 'unavailable', failMode: 'open' });
    const verdict = toHttpVerdict(decision([failed], { allowed: true, outcome: 'unavailable' }));
    expect(verdict).toEqual({
      action: 'pass',
      status: 200,
      headers: {},
      onLimitedHeaders: {},
      contentType: undefined,
      body: undefined,
      bodyText: undefined,
    });
  });

  it('lets shadow denies pass with no headers unless shadowHeaders', () => {
    const probe = over('shadow-probe', 30_000, { shadow: true });
    const d = decision([probe]);
    expect(d.allowed).toBe(true);
    expect(toHttpVerdict(d)).toEqual({
      action: 'pass',
      status: 200,
      headers: {},
      onLimitedHeaders: {},
      contentType: undefined,
      body: undefined,
      bodyText: undefined,
    });
    const shown = toHttpVerdict(d, { shadowHeaders: true });
    expect(shown.action).toBe('pass');
    expect(shown.headers['RateLimit']).toBe('"shadow-probe";r=0;t=30');
  });

  it('honours the header format, including none', () => {
    expect(toHttpVerdict(decision([over('a', 1000)]), { headers: false }).headers).toEqual({
      'Retry-After': '1',
      'Content-Type': 'application/problem+json',
      'Cache-Control': 'no-store',
    });
    expect(Object.keys(toHttpVerdict(decision([ok]), { headers: 'legacy', nowMs: 0 }).headers)).toEqual([
      'X-RateLimit-Limit',
      'X-RateLimit-Remaining',
      'X-RateLimit-Reset',
    ]);
  });

  it('puts only the documented members in the body', () => {
    const v = toHttpVerdict(decision([over('a', 1000)]));
    expect(Object.keys(v.body!).sort()).toEqual(
      ['error', 'policy', 'retry_after_seconds', 'status', 'title', 'type', 'violated-policies'].sort(),
    );
  });
});
