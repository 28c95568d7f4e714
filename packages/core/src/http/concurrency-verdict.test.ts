/**
 * The HTTP answer for concurrency policies: draft-10's quota unit `qu="concurrent-requests"` and no
 * `w`, `Retry-After` from the earliest slot's lease, and `concurrencyStatus: 503` for a request turned
 * away by concurrency policies alone (a rate denial stays 429).
 */
import { describe, expect, it } from 'vitest';
import { decision, result } from './fixtures.test-util.js';
import { rateLimitHeaders } from './headers.js';
import { createRateLimitHandler } from './options.js';
import { toHttpVerdict } from './verdict.js';

const slots = (extra = {}) =>
  result({
    policy: 'in-flight',
    algorithm: 'concurrency',
    limit: 3,
    windowMs: 10_000,
    remaining: 1,
    resetMs: 8200,
    ...extra,
  });
const slotsFull = slots({ allowed: false, outcome: 'over_limit', remaining: 0, retryAfterMs: 4100 });
const rate = (extra = {}) =>
  result({ policy: 'burst', limit: 20, windowMs: 20_000, remaining: 19, resetMs: 1000, ...extra });

describe('headers of a concurrency policy', () => {
  it('draft-10: q is the slots, qu="concurrent-requests", no w; r and t as for any policy', () => {
    expect(rateLimitHeaders(decision([slots(), rate()]))).toEqual({
      'RateLimit-Policy': '"in-flight";q=3;qu="concurrent-requests", "burst";q=20;w=20',
      RateLimit: '"in-flight";r=1;t=9, "burst";r=19;t=1',
    });
  });

  it('draft-7 and draft-6: the quota without a window', () => {
    expect(rateLimitHeaders(decision([slotsFull]), 'draft-7')['RateLimit-Policy']).toBe('3');
    expect(rateLimitHeaders(decision([slotsFull]), 'draft-6')['RateLimit-Policy']).toBe('3');
  });
});

describe('the verdict of a concurrency denial', () => {
  it('is 429 with Retry-After by default', () => {
    const verdict = toHttpVerdict(decision([slotsFull]));
    expect(verdict.status).toBe(429);
    expect(verdict.headers['Retry-After']).toBe('5');
    expect(verdict.body).toMatchObject({ status: 429, 'violated-policies': ['in-flight'] });
  });

  it('is 503 with the same Retry-After and policies under concurrencyStatus: 503', () => {
    const verdict = toHttpVerdict(decision([slotsFull]), { concurrencyStatus: 503 });
    expect(verdict.status).toBe(503);
    expect(verdict.headers['Retry-After']).toBe('5');
    expect(verdict.headers['Content-Type']).toBe('application/problem+json');
    expect(JSON.parse(verdict.bodyText as string)).toMatchObject({
      status: 503,
      'violated-policies': ['in-flight'],
      error: 'too many requests in flight',
      retry_after_seconds: 5,
    });
  });

  it('stays 429 under concurrencyStatus: 503 when a rate policy denied too', () => {
    const rateDenies = rate({ allowed: false, outcome: 'over_limit', remaining: 0, retryAfterMs: 900 });
    expect(toHttpVerdict(decision([slotsFull, rateDenies]), { concurrencyStatus: 503 }).status).toBe(429);
    expect(toHttpVerdict(decision([rateDenies]), { concurrencyStatus: 503 }).status).toBe(429);
  });
});

describe('the concurrencyStatus option', () => {
  it('takes 429 or 503, and names the option and the value otherwise, at construction', () => {
    expect(() =>
      createRateLimitHandler({ limit: 1, window: '1m', concurrencyStatus: 503 }, 'test'),
    ).not.toThrow();
    expect(() =>
      createRateLimitHandler({ limit: 1, window: '1m', concurrencyStatus: 500 as never }, 'test'),
    ).toThrow(/"concurrencyStatus" must be 429 or 503, got 500/);
  });
});
