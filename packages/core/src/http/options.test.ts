import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLimiter } from '../limiter/index.js';
import { storeDown } from '../limiter/test-stores.test-support.js';
import type { RateLimitOptions } from '../options/index.js';
import { RateLimitOptionsError } from '../options/options-error.js';
import { definePolicy, POLICY_DEFAULTS, PolicyError } from '../policy/index.js';
import { resetWarnings, WARNING_CODES } from '../warn.js';
import { decision, fakeLimiter, result } from './fixtures.test-util.js';
import { createRateLimitHandler } from './options.js';

type Req = { headers: Record<string, string>; id?: number };
const facts = (ip = '203.0.113.7', extra = {}) => ({
  method: 'GET',
  pattern: '/limited',
  path: '/limited',
  ip,
  ...extra,
});
const resolve = (options: RateLimitOptions<Req>) => createRateLimitHandler<Req>(options, 'test');

/** A limiter that records descriptors and answers with a fixed decision. */

afterEach(() => {
  vi.restoreAllMocks();
  resetWarnings();
});

describe('createRateLimitHandler validation', () => {
  it.each<[RateLimitOptions<Req>, string]>([
    [{ limit: -1, window: '1m' }, 'rateLimit: "limit" must be a positive integer, got -1'],
    [{ limit: 1.5, window: '1m' }, 'rateLimit: "limit" must be a positive integer, got 1.5'],
    [{ limit: 10 }, 'rateLimit: "window" is required with "limit"'],
    [
      { limit: 10, window: '1m', headers: 'x' as never },
      'rateLimit: "headers" must be one of draft-10, draft-7, draft-6, legacy or false, got "x"',
    ],
    [
      { limit: 10, window: '1m', identity: 'ip' as never },
      'rateLimit: "identity" must be a function, got "ip"',
    ],
    [{ limit: 10, window: '1m', skip: true as never }, 'rateLimit: "skip" must be a function, got true'],
    [{ limit: 10, window: '1m', cost: 0 }, 'rateLimit: "cost" must be a positive number'],
    [
      { limit: 10, window: '1m', cost: { default: -2 } },
      'rateLimit: "cost.default" must be a positive, finite number, got -2',
    ],
    [
      { limit: 10, window: '1m', shadow: 'yes' as never },
      'rateLimit: "shadow" must be true or false, got "yes"',
    ],
    [
      { limit: 10, window: '1m', ipv6Subnet: 200 },
      'rateLimit: "ipv6Subnet" must be an integer from 1 to 128 or false, got 200',
    ],
    [
      { limit: 10, window: '1m', failMode: 'maybe' as never },
      'rateLimit: "failMode" must be one of closed, open, local, got "maybe"',
    ],
    [{}, 'rateLimit: "policies" is required: give "policies", "limit" and "window", or a shared "limiter"'],
    [{ policies: [] }, 'rateLimit: "policies" must be a non-empty array'],
    [
      { policies: ['burst'] },
      'rateLimit: "policies" names a policy, which needs a shared "limiter", got "burst"',
    ],
    [
      { algorithm: 'gcra', policies: [{ name: 'x', limit: 1, window: 1000 }] },
      'rateLimit: "algorithm" applies to the "limit" + "window" shorthand only',
    ],
    [
      { limt: 5 } as never,
      'rateLimit: "limt" is not an option of test rateLimit(): did you mean "limit"?, got 5',
    ],
    [
      { max: 5, windowMs: 60_000 } as never,
      'rateLimit: "max" is not an option of test rateLimit(): did you mean "limit"? (requests per "window"), got 5',
    ],
    [
      { limit: 5, window: '1m', keyGenerator: () => 'x' } as never,
      'rateLimit: "keyGenerator" is not an option of test rateLimit(): did you mean "identity"?',
    ],
    [
      { limit: 5, window: '1m', standardHeaders: true } as never,
      'rateLimit: "standardHeaders" is not an option of test rateLimit(): did you mean "headers"?',
    ],
    [
      { points: 5, duration: 60 } as never,
      'rateLimit: "points" is not an option of test rateLimit(): did you mean "limit"?',
    ],
    [
      { max: 5, timeWindow: '1 minute' } as never,
      'rateLimit: "max" is not an option of test rateLimit(): did you mean "limit"?',
    ],
    [
      { limit: 5, window: '1m', timeWindow: '1 minute' } as never,
      'rateLimit: "timeWindow" is not an option of test rateLimit(): did you mean "window"?',
    ],
    [
      { limit: 5, window: '1m', skipOnError: true } as never,
      'rateLimit: "skipOnError" is not an option of test rateLimit(): did you mean "failMode"?',
    ],
    [
      { limit: 5, window: '1m', errorResponseBuilder: () => ({}) } as never,
      'rateLimit: "errorResponseBuilder" is not an option of test rateLimit(): did you mean "onLimited"?',
    ],
    [
      { limit: 5, window: '1m', nameSpace: 'x-' } as never,
      'rateLimit: "nameSpace" is not an option of test rateLimit(): did you mean "prefix"?',
    ],
    [
      { limit: 5, window: '1m', store: { evalsha: () => 0, eval: () => 0 } } as never,
      'rateLimit: "store" must be a Store, not a Redis client: wrap it in new RedisStore({ client }), got an object',
    ],
    [{ limiter: {} as never }, 'rateLimit: "limiter" must be a limiter from createLimiter()'],
    [
      { limit: 1, window: 1000, allowList: ['10.0.0.0/8', '10.0.0.0/99'] },
      'rateLimit: "allowList" has a prefix length above 32, got "10.0.0.0/99"',
    ],
    [{ limit: 1, window: 1000, allowList: '10.0.0.0/8' as never }, 'rateLimit: "allowList" must be an array'],
  ])('%j -> %s', (options, message) => {
    expect(() => resolve(options)).toThrow(RateLimitOptionsError);
    expect(() => resolve(options)).toThrow(message);
  });

  it('rejects shorthand combined with a limiter, and limiter-level options next to a shared limiter', () => {
    const limiter = fakeLimiter();
    expect(() => resolve({ limiter, limit: 5, window: '1m' })).toThrow('"limit" cannot be combined');
    expect(() => resolve({ limiter, store: {} as never })).toThrow('"store" belongs to the shared "limiter"');
    expect(() => resolve({ limiter, policies: ['nope'] })).toThrow(
      'rateLimit: "policies" must name a policy of the limiter (a, b), got "nope"',
    );
    expect(() => resolve({ limiter, policies: [{ name: 'x', limit: 1, window: 1 }] })).toThrow(
      "must name the shared limiter's policies",
    );
  });

  it('passes policy errors through from the limiter', () => {
    expect(() => resolve({ policies: [{ name: 'x', limit: 0, window: '1m' }] })).toThrow(PolicyError);
  });

  it('builds the shorthand as one policy named default, with the algorithm a policy object defaults to', () => {
    const r = resolve({ limit: 3, window: '10s' });
    expect(POLICY_DEFAULTS.algorithm).toBe('token-bucket');
    expect(r.limiter?.policies.map((p) => [p.name, p.algorithm, p.limit, p.windowMs])).toEqual([
      ['default', POLICY_DEFAULTS.algorithm, 3, 10_000],
    ]);
    expect(r.headerFormat).toBe('draft-10');
    expect(r.policyNames).toBeUndefined();
    expect(r.adapter).toBe('test');
  });

  it('applies failMode and shadow to policies built here', () => {
    const r = resolve({
      policies: [
        { name: 'a', limit: 1, window: '1m' },
        { name: 'b', limit: 1, window: '1m', failMode: 'closed' },
      ],
      failMode: 'open',
      shadow: true,
    });
    expect(r.limiter?.policies.map((p) => [p.name, p.failMode, p.shadow])).toEqual([
      ['a', 'open', true],
      ['b', 'closed', true],
    ]);
  });

  it('selects named policies from a shared limiter, once each', () => {
    const limiter = fakeLimiter();
    const r = resolve({ limiter, policies: ['b', 'a', 'b'] });
    expect(r.limiter).toBe(limiter);
    expect(r.policyNames).toEqual(['b', 'a']);
  });
});

describe('limitRequest', () => {
  it('admits, then denies with 429 and the problem body (real limiter)', async () => {
    const r = resolve({ limit: 2, window: '1m', algorithm: 'fixed-window' });
    const first = await r.limitRequest({ headers: {} }, facts());
    expect(first?.verdict.action).toBe('pass');
    expect(first?.verdict.headers).toEqual({
      'RateLimit-Policy': '"default";q=2;w=60',
      RateLimit: expect.stringMatching(/^"default";r=1;t=([1-9]|[1-5][0-9]|60)$/),
    });
    expect(first?.route).toBe('GET /limited');
    expect(first?.duplicate).toBe(false);
    await r.limitRequest({ headers: {} }, facts());
    const third = await r.limitRequest({ headers: {} }, facts());
    expect(third?.verdict.status).toBe(429);
    expect(third?.verdict.body).toMatchObject({ error: 'rate limit exceeded', policy: 'default' });
    // Fixed windows end on the window boundary: Retry-After is the time left in it.
    const t = /t=(\d+)/.exec(third?.verdict.headers['RateLimit'] ?? '')?.[1];
    expect(third?.verdict.headers['Retry-After']).toBe(t);
    expect(third?.verdict.body?.retry_after_seconds).toBe(Number(t));
    // Another client is untouched.
    expect((await r.limitRequest({ headers: {} }, facts('198.51.100.1')))?.verdict.action).toBe('pass');
  });

  it('returns undefined when skipped, without checking', async () => {
    const limiter = fakeLimiter();
    const r = resolve({ limiter, skip: async (req) => req.headers['x-internal'] === '1' });
    expect(await r.limitRequest({ headers: { 'x-internal': '1' } }, facts())).toBeUndefined();
    expect(limiter.seen).toHaveLength(0);
    expect(await r.limitRequest({ headers: {} }, facts())).toBeDefined();
    expect(limiter.seen).toHaveLength(1);
  });

  it('never limits IPs on the allow list', async () => {
    const limiter = fakeLimiter();
    const r = resolve({ limiter, allowList: ['10.0.0.0/8', 'loopback'] });
    expect(await r.limitRequest({ headers: {} }, facts('10.1.2.3'))).toBeUndefined();
    expect(await r.limitRequest({ headers: {} }, facts('::ffff:127.0.0.1'))).toBeUndefined();
    expect(await r.limitRequest({ headers: {} }, facts('11.0.0.1'))).toBeDefined();
    expect(limiter.seen).toHaveLength(1);
  });

  it('uses the identity function, falling back to the grouped IP', async () => {
    const limiter = fakeLimiter();
    const r = resolve({ limiter, identity: (req) => req.headers['x-api-key'] });
    await r.limitRequest({ headers: { 'x-api-key': 'key:tenant-1' } }, facts());
    await r.limitRequest({ headers: {} }, facts('2001:db8:0:12ab::1'));
    await r.limitRequest({ headers: { 'x-api-key': '' } }, facts('::ffff:10.0.0.9'));
    expect(limiter.seen.map((d) => d.identity)).toEqual([
      'key:tenant-1',
      { kind: 'ip', value: '2001:db8:0:1200::/56' },
      { kind: 'ip', value: '10.0.0.9' },
    ]);
  });

  it('keeps the kind an identity function gives, and falls back to the IP on an empty value', async () => {
    const limiter = fakeLimiter();
    const r = resolve({
      limiter,
      identity: (req) => {
        const key = req.headers['x-api-key'];
        return typeof key === 'string' ? { kind: 'key', value: key } : undefined;
      },
    });
    await r.limitRequest({ headers: { 'x-api-key': '127.0.0.1' } }, facts('127.0.0.1'));
    await r.limitRequest({ headers: { 'x-api-key': '' } }, facts('127.0.0.1'));
    await r.limitRequest({ headers: {} }, facts('127.0.0.1'));
    expect(limiter.seen.map((d) => d.identity)).toEqual([
      { kind: 'key', value: '127.0.0.1' },
      { kind: 'ip', value: '127.0.0.1' },
      { kind: 'ip', value: '127.0.0.1' },
    ]);
  });

  it('rejects an identity of an unknown kind', async () => {
    const r = resolve({ limiter: fakeLimiter(), identity: () => ({ kind: 'user', value: 'u1' }) as never });
    await expect(r.limitRequest({ headers: {} }, facts())).rejects.toThrow(
      `rateLimit: "identity" must return a string, { kind: 'ip' | 'key' | 'app', value: string } or undefined, got another object`,
    );
  });

  it('honours ipv6Subnet', async () => {
    const limiter = fakeLimiter();
    await resolve({ limiter, ipv6Subnet: 64 }).limitRequest({ headers: {} }, facts('2001:db8:0:12ab::1'));
    expect(limiter.seen[0]?.identity).toEqual({ kind: 'ip', value: '2001:db8:0:12ab::/64' });
  });

  it('shares one identity, with a coded warning, when there is neither identity nor IP', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const limiter = fakeLimiter();
    const r = resolve({ limiter });
    await r.limitRequest({ headers: {} }, facts(undefined as never, { ip: undefined }));
    await r.limitRequest({ headers: {} }, facts(undefined as never, { ip: undefined }));
    const unknown = { kind: 'ip', value: 'unknown-client' };
    expect(limiter.seen.map((d) => d.identity)).toEqual([unknown, unknown]);
    expect(warn).toHaveBeenCalledTimes(1);
    expect(String(warn.mock.calls[0]![0])).toContain(WARNING_CODES.NO_CLIENT_IP);
  });

  it('rejects an identity function that returns a non-string', async () => {
    const r = resolve({ limiter: fakeLimiter(), identity: () => 42 as never });
    await expect(r.limitRequest({ headers: {} }, facts())).rejects.toThrow('"identity" must return a string');
  });

  it('passes cost, route and policy names to the limiter', async () => {
    const limiter = fakeLimiter();
    const r = resolve({ limiter, policies: ['a'], cost: (req) => (req.headers['x-big'] ? { a: 5 } : 1) });
    await r.limitRequest(
      { headers: { 'x-big': '1' } },
      { method: 'post', pattern: '/transfers/:id', path: '/transfers/9', ip: '1.1.1.1' },
    );
    await r.limitRequest(
      { headers: {} },
      { method: 'GET', pattern: '/transfers/:id/status', path: '/transfers/9/status?x=1', ip: '1.1.1.1' },
    );
    await r.limitRequest({ headers: {} }, { method: 'GET', path: '/wp-admin/setup?x=1', ip: '1.1.1.1' });
    expect(limiter.seen).toEqual([
      {
        identity: { kind: 'ip', value: '1.1.1.1' },
        route: 'POST /transfers/:id',
        cost: { a: 5 },
        policies: ['a'],
      },
      {
        identity: { kind: 'ip', value: '1.1.1.1' },
        route: 'GET /transfers/:id/status',
        cost: 1,
        policies: ['a'],
      },
      // No pattern: the one key of unmatched routes, never the client's path.
      {
        identity: { kind: 'ip', value: '1.1.1.1' },
        route: '(unmatched)',
        cost: 1,
        policies: ['a'],
      },
    ]);
  });

  it('charges a request once per limiter and policy set, even from two layers at once', async () => {
    let now = 6_000_000; // on a minute boundary
    const limiter = createLimiter({
      policies: [
        { name: 'a', algorithm: 'fixed-window', limit: 10, window: '1m' },
        { name: 'b', algorithm: 'fixed-window', limit: 10, window: '1m' },
      ],
      clock: () => now,
    });
    const appLevel = resolve({ limiter, policies: ['a', 'b'] });
    const routeLevel = resolve({ limiter, policies: ['b', 'a'], headers: 'draft-7' });
    const onlyA = resolve({ limiter, policies: ['a'] });
    const req: Req = { headers: {} };
    const [x, y] = await Promise.all([
      appLevel.limitRequest(req, facts()),
      routeLevel.limitRequest(req, facts()),
    ]);
    expect(x?.duplicate).toBe(false);
    expect(y?.duplicate).toBe(true);
    expect(y?.decision).toBe(x?.decision);
    expect(y?.verdict.headers['RateLimit']).toBe('limit=10, remaining=9, reset=60');
    // A different policy set is a different check.
    const z = await onlyA.limitRequest(req, facts());
    expect(z?.duplicate).toBe(false);
    // The next request is charged again.
    now += 1;
    const next = await appLevel.limitRequest({ headers: {} }, facts());
    expect(next?.decision.results.map((r) => [r.policy, r.remaining])).toEqual([
      ['a', 7],
      ['b', 8],
    ]);
  });

  it('uses facts.marker when given', async () => {
    const limiter = fakeLimiter();
    const r = resolve({ limiter });
    const marker = {};
    await r.limitRequest({ headers: {} }, facts('1.1.1.1', { marker }));
    const again = await r.limitRequest({ headers: {} }, facts('1.1.1.1', { marker }));
    expect(again?.duplicate).toBe(true);
    expect(limiter.seen).toHaveLength(1);
  });

  it('shadow on a shared limiter lets denies pass, hides headers, and warns once', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const denied = decision([
      result({ policy: 'a', allowed: false, outcome: 'over_limit', remaining: 0, retryAfterMs: 5000 }),
    ]);
    const r = resolve({ limiter: fakeLimiter(denied), shadow: true });
    const out = await r.limitRequest({ headers: {} }, facts());
    expect(out?.verdict).toEqual({
      action: 'pass',
      status: 200,
      headers: {},
      onLimitedHeaders: {},
      body: undefined,
    });
    expect(out?.decision.allowed).toBe(true);
    expect(out?.decision.shadowed).toBe(true);
    expect(out?.decision.outcome).toBe('over_limit');
    expect(warn).toHaveBeenCalledTimes(1);
    expect(String(warn.mock.calls[0]![0])).toContain(WARNING_CODES.SHADOW_WITH_SHARED_LIMITER);
  });

  it('shadow on policies built here: would-denies pass and are reported as shadow', async () => {
    const r = resolve({ limit: 1, window: '1m', shadow: true });
    await r.limitRequest({ headers: {} }, facts());
    const out = await r.limitRequest({ headers: {} }, facts());
    expect(out?.verdict.action).toBe('pass');
    expect(out?.verdict.headers).toEqual({});
    expect(out?.decision.shadowed).toBe(true);
  });

  it('shadow with a policy from definePolicy() shadows each decision', async () => {
    vi.spyOn(console, 'warn').mockImplementation(() => {});
    const r = resolve({
      policies: [definePolicy({ name: 'p', algorithm: 'fixed-window', limit: 1, window: '1m' })],
      shadow: true,
    });
    await r.limitRequest({ headers: {} }, facts());
    const out = await r.limitRequest({ headers: {} }, facts());
    expect(out?.verdict.action).toBe('pass');
    expect(out?.decision.outcome).toBe('over_limit');
    expect(out?.decision.shadowed).toBe(true);
  });

  it('answers 503 under closed when the store fails, 200 under open', async () => {
    const broken = storeDown('down');
    const strict = resolve({ policies: [{ name: 'strict', limit: 5, window: '1s' }], store: broken });
    const s = await strict.limitRequest({ headers: {} }, facts());
    expect(s?.verdict.status).toBe(503);
    expect(s?.verdict.body).toEqual({
      type: 'about:blank',
      title: 'Service Unavailable',
      status: 503,
      error: 'rate limiter unavailable',
    });
    const lenient = resolve({
      policies: [{ name: 'lenient', limit: 5, window: '1s' }],
      store: broken,
      failMode: 'open',
    });
    expect((await lenient.limitRequest({ headers: {} }, facts()))?.verdict.action).toBe('pass');
  });
});
