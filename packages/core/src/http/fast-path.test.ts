/**
 * The request path's shortcuts give the same answers as the plain definitions: draft-10 headers
 * from cached policy strings, problem bodies from a cache, one-pass retry and body computations,
 * limitRequest without awaiting synchronous hooks, and double-count records kept beside the marker.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { RateLimitOptions } from '../options/index.js';
import type { Decision, PolicyResult } from '../types.js';
import { resetWarnings } from '../warn.js';
import { decision, fakeLimiter, result } from './fixtures.test-util.js';
import { rateLimitHeaders, visibleResults, windowSeconds } from './headers.js';
import { createRateLimitHandler } from './options.js';
import {
  type ProblemBody,
  problemJson,
  QUOTA_EXCEEDED_TITLE,
  QUOTA_EXCEEDED_TYPE,
  quotaExceededProblem,
  unavailableProblem,
} from './problem.js';
import { denyingResults, longestWaitPolicy, retryAfterSeconds } from './retry-after.js';
import { serializeSfList } from './structured-fields.js';
import { toHttpVerdict } from './verdict.js';

afterEach(() => {
  vi.restoreAllMocks();
  resetWarnings();
});

const whole = (n: number) => (Number.isFinite(n) && n > 0 ? Math.floor(n) : 0);
const ceilS = (ms: number) => (Number.isFinite(ms) && ms > 0 ? Math.ceil(ms / 1000) : 0);

/** draft-10 as the definition reads: serializeSfList over the visible results. */
function draft10Reference(d: Decision, shadowHeaders: boolean): Record<string, string> {
  const visible = visibleResults(d, shadowHeaders);
  if (visible.length === 0) return {};
  return {
    'RateLimit-Policy': serializeSfList(
      visible.map((p) => ({
        value: p.policy,
        params: [
          ['q', whole(p.limit)],
          ['w', windowSeconds(p.windowMs)],
        ],
      })),
    ),
    RateLimit: serializeSfList(
      visible.map((p) => ({
        value: p.policy,
        params: [
          ['r', whole(p.remaining)],
          ['t', ceilS(p.resetMs)],
        ],
      })),
    ),
  };
}

/** The 429 body as the definition reads, through the exported helpers. */
function bodyReference(d: Decision): ProblemBody {
  const violated = denyingResults(d).map((r) => r.policy);
  const policy = longestWaitPolicy(d);
  if (violated.length === 0 && policy !== undefined) violated.push(policy);
  const body: ProblemBody = {
    type: QUOTA_EXCEEDED_TYPE,
    title: QUOTA_EXCEEDED_TITLE,
    status: 429,
    'violated-policies': violated,
    error: 'rate limit exceeded',
  };
  if (policy !== undefined) body.policy = policy;
  body.retry_after_seconds = retryAfterSeconds(d);
  return body;
}

const number = fc.oneof(
  fc.integer({ min: 0, max: 100_000_000 }),
  fc.double({ noNaN: false }),
  fc.constantFrom(0, -1, 1e300, Number.POSITIVE_INFINITY, 999_999_999_999_999.5),
);
const arbResult: fc.Arbitrary<PolicyResult> = fc
  .record({
    policy: fc.constantFrom('a', 'b', 'burst', 'daily', 'q"x'),
    allowed: fc.boolean(),
    outcome: fc.constantFrom('allowed', 'over_limit', 'unavailable'),
    limit: number,
    windowMs: number,
    remaining: number,
    resetMs: number,
    retryAfterMs: number,
    shadow: fc.boolean(),
  })
  .map((r) => result(r as Partial<PolicyResult> & { policy: string }));

describe('draft-10 headers from cached policy strings', () => {
  it('match serializeSfList over the visible results, for any results', () => {
    fc.assert(
      fc.property(fc.array(arbResult, { minLength: 1, maxLength: 4 }), fc.boolean(), (results, shadow) => {
        const d = decision(results);
        expect(rateLimitHeaders(d, 'draft-10', { shadowHeaders: shadow })).toEqual(
          draft10Reference(d, shadow),
        );
      }),
      { numRuns: 500 },
    );
  });

  it('follow a policy whose limit or window changes under the same name', () => {
    const one = (limit: number, windowMs: number) =>
      rateLimitHeaders(decision([result({ policy: 'same', limit, windowMs })]))['RateLimit-Policy'];
    expect(one(20, 20_000)).toBe('"same";q=20;w=20');
    expect(one(30, 20_000)).toBe('"same";q=30;w=20');
    expect(one(30, 60_000)).toBe('"same";q=30;w=60');
  });

  it('still refuse a policy name an sf-string cannot carry', () => {
    expect(() => rateLimitHeaders(decision([result({ policy: 'caf\u00e9' })]))).toThrow(TypeError);
  });

  it('return a fresh record every time', () => {
    const d = decision([result({ policy: 'a' })]);
    const first = rateLimitHeaders(d);
    first['X-Extra'] = '1';
    expect(rateLimitHeaders(d)).not.toHaveProperty('X-Extra');
  });
});

describe('one-pass retry and body computations', () => {
  it('quotaExceededProblem and retryAfterSeconds match their definitions, for any results', () => {
    fc.assert(
      fc.property(fc.array(arbResult, { maxLength: 4 }), number, (results, retryAfterMs) => {
        const d = decision(results, { outcome: 'over_limit', allowed: false, retryAfterMs });
        expect(quotaExceededProblem(d)).toEqual(bodyReference(d));
        const seconds = retryAfterSeconds(d);
        const denying = denyingResults(d);
        const ms = denying.length === 0 ? retryAfterMs : Math.max(0, ...denying.map((r) => r.retryAfterMs));
        expect(seconds).toBe(!Number.isFinite(ms) || ms <= 0 ? 1 : Math.max(1, Math.ceil(ms / 1000)));
      }),
      { numRuns: 500 },
    );
  });

  it('toHttpVerdict keeps the header order: rate-limit headers, Retry-After, Content-Type, Cache-Control', () => {
    const d = decision([result({ policy: 'a', allowed: false, outcome: 'over_limit', retryAfterMs: 2500 })]);
    expect(Object.keys(toHttpVerdict(d).headers)).toEqual([
      'RateLimit-Policy',
      'RateLimit',
      'Retry-After',
      'Content-Type',
      'Cache-Control',
    ]);
    expect(Object.keys(toHttpVerdict(d, { headers: false }).headers)).toEqual([
      'Retry-After',
      'Content-Type',
      'Cache-Control',
    ]);
  });

  it('toHttpVerdict gives every call its own headers and body', () => {
    const d = decision([result({ policy: 'a', allowed: false, outcome: 'over_limit', retryAfterMs: 2500 })]);
    const first = toHttpVerdict(d);
    (first.headers as Record<string, string>)['X-Request'] = 'one';
    first.body!['violated-policies']!.push('mutated');
    const second = toHttpVerdict(d);
    expect(second.headers).not.toHaveProperty('X-Request');
    expect(second.body!['violated-policies']).toEqual(['a']);
  });
});

describe('problemJson', () => {
  it('is JSON.stringify of the bodies core makes, for any decision', () => {
    fc.assert(
      fc.property(fc.array(arbResult, { maxLength: 4 }), number, (results, retryAfterMs) => {
        const d = decision(results, { outcome: 'over_limit', allowed: false, retryAfterMs });
        const body = quotaExceededProblem(d);
        expect(problemJson(body)).toBe(JSON.stringify(body));
        // Twice: the second answer comes from the cache.
        expect(problemJson(body)).toBe(JSON.stringify(body));
      }),
      { numRuns: 500 },
    );
    expect(problemJson(unavailableProblem())).toBe(JSON.stringify(unavailableProblem()));
  });

  it('serializes changed or extended bodies as they are', () => {
    const d = decision([result({ policy: 'a', allowed: false, outcome: 'over_limit', retryAfterMs: 4000 })]);
    const body = quotaExceededProblem(d);
    problemJson(body);
    const extended = { ...body, instance: '/limited' } as ProblemBody;
    expect(problemJson(extended)).toBe(JSON.stringify(extended));
    const changed = { ...body, error: 'slow down' };
    expect(problemJson(changed)).toBe(JSON.stringify(changed));
    const other = { ...body, 'violated-policies': ['b'] };
    expect(problemJson(other)).toBe(JSON.stringify(other));
    const unavailable = { ...unavailableProblem(), detail: 'x' } as ProblemBody;
    expect(problemJson(unavailable)).toBe(JSON.stringify(unavailable));
  });

  it('answers in the canonical field order whatever order the cache was filled in', () => {
    const reordered: ProblemBody = {
      retry_after_seconds: 9,
      policy: 'order',
      error: 'rate limit exceeded',
      'violated-policies': ['order'],
      status: 429,
      title: QUOTA_EXCEEDED_TITLE,
      type: QUOTA_EXCEEDED_TYPE,
    };
    problemJson(reordered);
    const canonical = quotaExceededProblem(
      decision([result({ policy: 'order', allowed: false, outcome: 'over_limit', retryAfterMs: 9000 })]),
    );
    expect(problemJson(canonical)).toBe(JSON.stringify(canonical));
  });
});

describe('limitRequest without awaiting synchronous hooks', () => {
  type Req = { headers: Record<string, string> };
  const facts = { method: 'GET', pattern: '/limited', path: '/limited', ip: '203.0.113.7' };
  const resolve = (options: RateLimitOptions<Req>) => createRateLimitHandler<Req>(options, 'test');

  it('takes identity, cost and skip from sync functions, promises and thenables alike', async () => {
    // biome-ignore lint/suspicious/noThenProperty: a thenable on purpose, as hooks may return one.
    const thenable = <T>(value: T) => ({ then: (ok: (v: T) => unknown) => ok(value) }) as PromiseLike<T>;
    for (const wrap of [<T>(v: T) => v, <T>(v: T) => Promise.resolve(v), thenable]) {
      const limiter = fakeLimiter();
      const r = resolve({
        limiter,
        identity: () => wrap('k') as never,
        cost: () => wrap(3) as never,
        skip: (req) => wrap(req.headers['x-skip'] === '1') as never,
      });
      expect(await r.limitRequest({ headers: { 'x-skip': '1' } }, facts)).toBeUndefined();
      const decided = await r.limitRequest({ headers: {} }, facts);
      expect(decided?.verdict.action).toBe('pass');
      expect(limiter.seen).toEqual([{ identity: 'k', route: 'GET /limited', cost: 3 }]);
    }
  });

  it('turns a throw in identity, cost or skip into a rejection, never a synchronous throw', async () => {
    const boom = () => {
      throw new Error('boom');
    };
    for (const options of [{ identity: boom }, { cost: boom }, { skip: boom }] as RateLimitOptions<Req>[]) {
      const r = resolve({ limiter: fakeLimiter(), ...options });
      let promise: Promise<unknown> | undefined;
      expect(() => {
        promise = r.limitRequest({ headers: {} }, facts);
      }).not.toThrow();
      await expect(promise).rejects.toThrow('boom');
    }
  });

  it('gives a second layer the same rejection when the first check failed', async () => {
    const r = resolve({
      limiter: fakeLimiter(),
      identity: () => {
        throw new Error('boom');
      },
    });
    const req = { headers: {} };
    await expect(r.limitRequest(req, facts)).rejects.toThrow('boom');
    await expect(r.limitRequest(req, facts)).rejects.toThrow('boom');
  });

  it('charges once per marker, for frozen markers too, and leaves no visible trace on the marker', async () => {
    for (const marker of [{}, Object.freeze({}), Object.seal({}), Object.preventExtensions({})]) {
      const limiter = fakeLimiter();
      const r = resolve({ limiter });
      await r.limitRequest({ headers: {} }, { ...facts, marker });
      const again = await r.limitRequest({ headers: {} }, { ...facts, marker });
      expect(again?.duplicate).toBe(true);
      expect(limiter.seen).toHaveLength(1);
      expect(Reflect.ownKeys(marker)).toEqual([]);
    }
    const req = { headers: {} };
    const r = resolve({ limiter: fakeLimiter() });
    await r.limitRequest(req, facts);
    expect(Reflect.ownKeys(req)).toEqual(['headers']);
    expect({ ...req }).toEqual({ headers: {} });
  });

  it('finds the check of another layer on the same limiter and policy set, in any order', async () => {
    for (const order of [
      [0, 1],
      [1, 0],
    ]) {
      const one = fakeLimiter();
      const two = fakeLimiter();
      const layers = (limiter: ReturnType<typeof fakeLimiter>) => [
        createRateLimitHandler<Req>({ limiter }, 'test'),
        createRateLimitHandler<Req>({ limiter }, 'test'),
      ];
      const [oneA, oneB] = order.map((i) => layers(one)[i]!);
      const [twoA, twoB] = order.map((i) => layers(two)[i]!);
      const req = { headers: {} };
      expect((await oneA!.limitRequest(req, facts))?.duplicate).toBe(false);
      expect((await twoA!.limitRequest(req, facts))?.duplicate).toBe(false);
      // Each limiter's first check is found by the other layer on that limiter.
      expect((await oneB!.limitRequest(req, facts))?.duplicate).toBe(true);
      expect((await twoB!.limitRequest(req, facts))?.duplicate).toBe(true);
      expect((await oneA!.limitRequest(req, facts))?.duplicate).toBe(true);
      expect([one.seen.length, two.seen.length]).toEqual([1, 1]);
      expect(Reflect.ownKeys(req)).toEqual(['headers']);
    }
  });

  it('takes no requestMarks option: where checks are kept is not part of the API', () => {
    expect(() =>
      createRateLimitHandler<Req>({ limiter: fakeLimiter(), requestMarks: 'weak-map' } as never, 'test'),
    ).toThrow('rateLimit: "requestMarks" is not an option of test rateLimit()');
  });

  it('keeps the checks of several limiters on one marker apart', async () => {
    const first = fakeLimiter();
    const second = fakeLimiter();
    const a = resolve({ limiter: first });
    const b = resolve({ limiter: second });
    const req = { headers: {} };
    expect((await a.limitRequest(req, facts))?.duplicate).toBe(false);
    expect((await b.limitRequest(req, facts))?.duplicate).toBe(false);
    expect((await a.limitRequest(req, facts))?.duplicate).toBe(true);
    expect((await b.limitRequest(req, facts))?.duplicate).toBe(true);
    expect([first.seen.length, second.seen.length]).toEqual([1, 1]);
  });
});
