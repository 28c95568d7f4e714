/**
 * The deny list, one scenario table run against every adapter over real HTTP on 127.0.0.1:
 * 403 problem+json with its exact headers, nothing charged, the identity kinds kept apart,
 * replaced at run time, enforced under shadow, handed to `onLimited`, bad entries refused.
 */
import { createDenyList, createLimiter, type Limiter, MemoryStore, type PolicyInput } from '@sluice/core';
import { afterEach, describe, expect, test } from 'vitest';
import { HARNESSES, type Harness, type NeutralOptions, type Served } from './adapters.js';
import { json, type Reply, request } from './client.js';

const T0 = 1_800_000_000_000;
const API: PolicyInput = { name: 'api', algorithm: 'fixed-window', limit: 3, window: '10s' };
const FORBIDDEN_BODY = { type: 'about:blank', title: 'Forbidden', status: 403, error: 'forbidden' };

type Get = (path: string, headers?: Record<string, string>) => Promise<Reply>;

interface Scenario {
  name: string;
  options(limiter: Limiter): NeutralOptions;
  run(get: Get, limiter: Limiter, harness: Harness): Promise<void>;
}

/** The x-api-key header as an identity of kind key, else the client IP. */
const apiKey = (req: { header(name: string): string | undefined }) => {
  const value = req.header('x-api-key');
  return value === undefined ? undefined : { kind: 'key' as const, value };
};

async function expectForbidden(reply: Reply, harness: Harness): Promise<void> {
  expect(reply.status).toBe(403);
  expect(reply.headers['content-type']).toBe(harness.problemContentType);
  expect(reply.headers['cache-control']).toBe('no-store');
  expect(reply.headers['retry-after']).toBeUndefined();
  expect(reply.headers.ratelimit).toBeUndefined();
  expect(reply.headers['ratelimit-policy']).toBeUndefined();
  expect(json(reply)).toEqual(FORBIDDEN_BODY);
}

/** Three allowed requests with remaining 2, 1, 0: nothing was charged before them. */
async function expectFullQuota(get: Get, headers?: Record<string, string>): Promise<void> {
  for (const remaining of [2, 1, 0]) {
    const reply = await get('/items/1', headers);
    expect(reply.status).toBe(200);
    expect(reply.headers.ratelimit).toBe(`"api";r=${remaining};t=10`);
  }
}

const replaceable = createDenyList();

const SCENARIOS: Scenario[] = [
  {
    name: 'a client IP in a denied CIDR range: 403 problem+json, no-store, no rate-limit headers, nothing charged',
    options: (limiter) => ({ limiter, denyList: ['10.0.0.0/8', '127.0.0.0/8', '2001:db8::/32'] }),
    async run(get, limiter, harness) {
      for (let i = 0; i < 5; i++) await expectForbidden(await get('/items/1'), harness);
      const peek = await limiter.peek({
        identity: { kind: 'ip', value: '127.0.0.1' },
        route: 'GET /items/:id',
      });
      expect(peek.remaining).toBe(3);
    },
  },
  {
    name: 'a denied API key (kind key) gets 403; other keys and the client IP itself are limited as usual',
    options: (limiter) => ({ limiter, identity: apiKey, denyList: { key: ['leaked', '127.0.0.1'] } }),
    async run(get, _limiter, harness) {
      for (let i = 0; i < 4; i++)
        await expectForbidden(await get('/items/1', { 'x-api-key': 'leaked' }), harness);
      // An API key spelled like the client's address is denied; the address itself is not.
      await expectForbidden(await get('/items/1', { 'x-api-key': '127.0.0.1' }), harness);
      await expectFullQuota(get);
      await expectFullQuota(get, { 'x-api-key': 'good' });
    },
  },
  {
    name: 'replaced at run time: the next request sees the new list; a bad replacement throws and keeps the old one',
    options: (limiter) => {
      replaceable.replace([]);
      return { limiter, denyList: replaceable };
    },
    async run(get, _limiter, harness) {
      expect((await get('/items/1')).status).toBe(200);
      replaceable.replace({ ip: ['127.0.0.1', '::1'] });
      await expectForbidden(await get('/items/1'), harness);
      expect(() => replaceable.replace({ ip: ['127.0.0.1/33'] })).toThrow(
        /denyList\.replace: "denyList\.ip" has a prefix length above 32, got "127\.0\.0\.1\/33"/,
      );
      await expectForbidden(await get('/items/1'), harness);
      replaceable.replace({ key: ['someone-else'] });
      // Two of three units were left by the first request: the denied ones charged nothing.
      for (const remaining of [1, 0]) {
        expect((await get('/items/1')).headers.ratelimit).toBe(`"api";r=${remaining};t=10`);
      }
    },
  },
  {
    name: 'policies chosen per request: a deny-listed request gets 403 before the choice is checked',
    options: (limiter) => ({ limiter, policies: async () => ['api'], denyList: ['127.0.0.0/8', '::1'] }),
    async run(get, limiter, harness) {
      for (let i = 0; i < 4; i++) await expectForbidden(await get('/items/1'), harness);
      const peek = await limiter.peek({
        identity: { kind: 'ip', value: '127.0.0.1' },
        route: 'GET /items/:id',
      });
      expect(peek.remaining).toBe(3);
    },
  },
  {
    name: 'shadow mode does not lift the deny list',
    options: (limiter) => ({ limiter, shadow: true, denyList: ['127.0.0.1', '::1', '::ffff:127.0.0.1'] }),
    async run(get, _limiter, harness) {
      await expectForbidden(await get('/items/1'), harness);
    },
  },
  {
    name: "the app's onLimited answers a deny-listed request too, with the verdict's status 403",
    options: (limiter) => ({ limiter, teapot: true, denyList: ['127.0.0.0/8', '::1'] }),
    async run(get) {
      const reply = await get('/items/1');
      expect(reply.status).toBe(418);
      expect(json(reply)).toEqual({ custom: true, status: 403 });
    },
  },
];

/** The clock of the ban scenario's limiter. */
const banClock = { now: T0 };

describe.each(HARNESSES)('$name: a policy ban', (harness) => {
  let served: Served | undefined;
  afterEach(async () => {
    await served?.close();
    served = undefined;
  });

  test('after the policy denies, 429 with Retry-After the rest of the block until it ends, nothing charged', async () => {
    banClock.now = T0;
    const clock = () => banClock.now;
    const policy: PolicyInput = { ...API, ban: { blockMs: '1m' } };
    const limiter = createLimiter({
      policies: [policy],
      store: new MemoryStore({ clock }),
      clock,
      denyCache: false,
    });
    served = await harness.serve({ limiter }, 'route');
    const get = (path: string) => request(`${served!.url}${path}`);
    await expectFullQuota(get);
    const denied = await get('/items/1');
    expect(denied.status).toBe(429);
    expect(denied.headers['retry-after']).toBe('60');
    expect(json(denied)).toMatchObject({
      error: 'rate limit exceeded',
      policy: 'api',
      retry_after_seconds: 60,
    });
    banClock.now += 30_000; // the policy's window is over: only the ban denies
    const banned = await get('/items/1');
    expect(banned.status).toBe(429);
    expect(banned.headers['retry-after']).toBe('30');
    expect(banned.headers.ratelimit).toBe('"api";r=3;t=0');
    banClock.now += 30_000;
    await expectFullQuota(get);
  });
});

describe.each(HARNESSES)('$name: deny list', (harness) => {
  let served: Served | undefined;
  afterEach(async () => {
    await served?.close();
    served = undefined;
  });

  for (const scenario of SCENARIOS) {
    test(scenario.name, async () => {
      const clock = () => T0;
      const limiter = createLimiter({ policies: [API], store: new MemoryStore({ clock }), clock });
      served = await harness.serve(scenario.options(limiter), 'route');
      const base = served.url;
      await scenario.run((path, headers) => request(`${base}${path}`, { headers }), limiter, harness);
    });
  }

  test('construction rejects a bad entry, naming the option and the value', async () => {
    const cases: [unknown, RegExp][] = [
      [
        ['10.0.0.0/8', 'not-an-ip'],
        /"denyList\.ip" is not an IPv4 or IPv6 address or CIDR range, got "not-an-ip"/,
      ],
      [{ key: [''] }, /"denyList\.key" must be a non-empty string, got ""/],
      [{ user: ['x'] }, /"denyList\.user" is not a kind of deny-list entry/],
      ['10.0.0.0/8', /"denyList" must be an array of CIDR ranges/],
    ];
    for (const [denyList, message] of cases) {
      const construct = (async () => harness.construct({ limit: 10, window: '1m', denyList }))();
      await expect(construct).rejects.toThrow(message);
      await expect(construct).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
    }
  });
});
