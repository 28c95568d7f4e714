/**
 * One scenario table, run against every adapter (Express 5 and 4, Koa 3 and 2, NestJS on the
 * Express and the Fastify platform, Hono on @hono/node-server) over real HTTP on 127.0.0.1,
 * with the memory store and an injected clock.
 */
import { createLimiter, type Limiter, MemoryStore, type PolicyInput, type Store } from '@sluice/core';
import { afterEach, describe, expect, test } from 'vitest';
import { storeDown } from '../../packages/core/src/limiter/test-stores.test-support.js';
import { EXPECTED } from '../support/expected.js';
import { HARNESSES, type Harness, type Mount, type NeutralOptions, type Served } from './adapters.js';
import { json, type Reply, request } from './client.js';

/** A start time on a 10 s boundary, so fixed windows start with it. */
const T0 = 1_800_000_000_000;

interface World {
  /** The injected clock; move it with `advance`. */
  now: number;
  advance(ms: number): void;
  limiter(policies: readonly PolicyInput[], store?: Store): Limiter;
}

function world(): World {
  const w: World = {
    now: T0,
    advance(ms) {
      w.now += ms;
    },
    limiter(policies, store) {
      const clock = () => w.now;
      return createLimiter({ policies, store: store ?? new MemoryStore({ clock }), clock });
    },
  };
  return w;
}

/**
 * The media type of a reply, without parameters: Nest's platforms send problem+json through
 * their exception layer as `application/problem+json; charset=utf-8`.
 */
function mediaType(reply: Reply): string | undefined {
  return reply.headers['content-type']?.split(';')[0]?.trim();
}

/** A store whose every call rejects: the limiter cannot decide. */
const failingStore = storeDown();

interface Client {
  get(path: string, headers?: Record<string, string>): Promise<Reply>;
}

interface Scenario {
  name: string;
  mount: Mount;
  options(w: World): NeutralOptions;
  /** `harness` says what differs by design: the exact problem content type, patterns app-wide. */
  run(client: Client, w: World, harness: Harness): Promise<void>;
}

const API_3_PER_10S: PolicyInput = { name: 'api', algorithm: 'fixed-window', limit: 3, window: '10s' };

/**
 * An identity of `kind` spelled like the client's address (`x-api-key: 127.0.0.1`, as
 * `{ kind: 'key' }` or as a plain string, kind `app`) never shares the client's bucket, either way.
 */
function identityKindScenario(kind: 'key' | 'app'): Scenario {
  return {
    name: `identity kinds: a ${kind} identity spelled 127.0.0.1 and the client 127.0.0.1 never share a bucket`,
    mount: 'route',
    options: (w) => ({
      limiter: w.limiter([{ name: 'api', algorithm: 'fixed-window', limit: 1, window: '10s' }]),
      identity: (req) => {
        const value = req.header('x-api-key');
        return value === undefined || kind === 'app' ? value : { kind, value };
      },
    }),
    async run(client, w) {
      const spoof = { 'x-api-key': '127.0.0.1' };
      // The key first: the client address keeps its own quota...
      expect((await client.get('/items/1', spoof)).status).toBe(200);
      expect((await client.get('/items/1')).status).toBe(200);
      expect((await client.get('/items/1', spoof)).status).toBe(429);
      expect((await client.get('/items/1')).status).toBe(429);
      w.advance(10_000);
      // ...and the client address first: the key keeps its own.
      expect((await client.get('/items/1')).status).toBe(200);
      expect((await client.get('/items/1', spoof)).status).toBe(200);
      expect((await client.get('/items/1')).status).toBe(429);
    },
  };
}

/**
 * Two requests of a one-request quota in shadow mode: both answered 200 with no rate-limit headers,
 * the first decision not shadowed, the second shadowed and allowed.
 */
async function secondRequestShadowed(client: Client): Promise<void> {
  const first = await client.get('/items/1');
  const second = await client.get('/items/1');
  for (const reply of [first, second]) {
    expect(reply.status).toBe(200);
    expect(reply.headers.ratelimit).toBeUndefined();
    expect(reply.headers['ratelimit-policy']).toBeUndefined();
    expect(reply.headers['retry-after']).toBeUndefined();
  }
  expect((json(first) as { rateLimit: { shadowed: boolean } }).rateLimit.shadowed).toBe(false);
  expect((json(second) as { rateLimit: unknown }).rateLimit).toMatchObject({
    shadowed: true,
    allowed: true,
  });
}

/** Waits until `done()` holds (a settle runs after the response, so after the client has it). */
async function until(done: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if (await done()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** `settle`: every request reserves its cost and is settled to the units it used, after the response. */
function settleScenario(): Scenario {
  let settled = 0;
  return {
    name: 'settle: a request reserves its cost and is settled to the units it used once the response ended',
    mount: 'route',
    options: (w) => {
      settled = 0;
      return {
        limiter: w.limiter([{ name: 'api', algorithm: 'fixed-window', limit: 10, window: '10s' }]),
        cost: 5,
        settle: (req, response) => {
          expect(response).toEqual({ statusCode: 200, completed: true });
          settled += 1;
          return Number(req.header('x-used'));
        },
      };
    },
    async run(client) {
      // 5 reserved, 1 used: each check sees the units used before it plus its own 5.
      for (const [i, remaining] of [5, 4, 3].entries()) {
        const reply = await client.get('/items/1', { 'x-used': '1' });
        expect(reply.status).toBe(200);
        expect(reply.headers.ratelimit).toBe(`"api";r=${remaining};t=10`);
        await until(() => settled === i + 1, 'the settle');
      }
      // Used what it reserved: 3 + 5 = 8, nothing to settle.
      expect((await client.get('/items/1', { 'x-used': '5' })).headers.ratelimit).toBe('"api";r=2;t=10');
      await until(() => settled === 4, 'the settle');
      expect((await client.get('/items/1', { 'x-used': '1' })).status).toBe(429);
    },
  };
}

/**
 * `skipSuccessfulRequests` (only failures count, as for logins) and `skipFailedRequests` (only
 * successes count): a skipped request is settled to 0 once its response ended.
 */
function skipScenario(option: 'skipSuccessfulRequests' | 'skipFailedRequests'): Scenario {
  let limiter: Limiter | undefined;
  const skipped = option === 'skipSuccessfulRequests' ? '200' : '500';
  const counted = option === 'skipSuccessfulRequests' ? '401' : '200';
  const remaining = async () => (await (limiter as Limiter).peek({ identity: 'tenant' })).remaining;
  return {
    name: `${option}: a ${option === 'skipSuccessfulRequests' ? 'successful' : 'failed'} request settles to 0, the others count`,
    mount: 'route',
    options: (w) => {
      limiter = w.limiter([{ name: 'api', algorithm: 'fixed-window', limit: 2, window: '10s' }]);
      return { limiter, identity: () => 'tenant', [option]: true };
    },
    async run(client) {
      for (let i = 0; i < 3; i++) {
        const reply = await client.get('/items/1', { 'x-status': skipped });
        expect(reply.status).toBe(Number(skipped));
        expect(reply.headers.ratelimit).toBe('"api";r=1;t=10');
        await until(async () => (await remaining()) === 2, 'the refund');
      }
      const first = await client.get('/items/1', { 'x-status': counted });
      expect([first.status, first.headers.ratelimit]).toEqual([Number(counted), '"api";r=1;t=10']);
      const second = await client.get('/items/1', { 'x-status': counted });
      expect([second.status, second.headers.ratelimit]).toEqual([Number(counted), '"api";r=0;t=10']);
      expect((await client.get('/items/1', { 'x-status': skipped })).status).toBe(429);
      expect(await remaining()).toBe(0);
    },
  };
}

const SCENARIOS: Scenario[] = [
  {
    name: '200s then 429 with exact headers and a problem+json body; the clock restores the quota',
    mount: 'route',
    options: (w) => ({ limiter: w.limiter([API_3_PER_10S]) }),
    async run(client, w, harness) {
      for (const remaining of [2, 1, 0]) {
        const reply = await client.get('/items/1');
        expect(reply.status).toBe(200);
        expect(reply.headers['ratelimit-policy']).toBe('"api";q=3;w=10');
        expect(reply.headers.ratelimit).toBe(`"api";r=${remaining};t=10`);
        expect(reply.headers['retry-after']).toBeUndefined();
        expect(mediaType(reply)).toBe('application/json');
        expect(json(reply)).toEqual({
          ok: true,
          rateLimit: { allowed: true, outcome: 'allowed', policy: 'api', remaining, shadowed: false },
        });
      }
      w.advance(4000);
      const denied = await client.get('/items/2');
      expect(denied.status).toBe(429);
      expect(mediaType(denied)).toBe('application/problem+json');
      expect(denied.headers['content-type']).toBe(harness.problemContentType);
      expect(denied.headers['retry-after']).toBe('6');
      expect(denied.headers['cache-control']).toBe('no-store');
      expect(denied.headers['ratelimit-policy']).toBe('"api";q=3;w=10');
      expect(denied.headers.ratelimit).toBe('"api";r=0;t=6');
      expect(json(denied)).toEqual(EXPECTED.tooManyRequests(['api'], 'api', 6));
      expect(denied.text).not.toContain('127.0.0.1');
      w.advance(6000);
      const again = await client.get('/items/1');
      expect(again.status).toBe(200);
      expect(again.headers.ratelimit).toBe('"api";r=2;t=10');
    },
  },
  {
    name: 'shorthand limit + window builds one policy named "default"',
    mount: 'route',
    options: () => ({ limit: 2, window: '1m' }),
    async run(client) {
      expect((await client.get('/items/1')).status).toBe(200);
      const second = await client.get('/items/1');
      expect(second.status).toBe(200);
      expect(second.headers['ratelimit-policy']).toMatch(/^"default";q=2;w=60$/);
      const third = await client.get('/items/1');
      expect(third.status).toBe(429);
      expect((json(third) as { policy: string }).policy).toBe('default');
    },
  },
  {
    name: 'allowList: a listed client IP is never limited and gets no headers',
    mount: 'route',
    options: () => ({ limit: 1, window: '1m', allowList: ['loopback'] }),
    async run(client) {
      for (let i = 0; i < 3; i++) {
        const reply = await client.get('/items/1');
        expect(reply.status).toBe(200);
        expect(reply.headers.ratelimit).toBeUndefined();
      }
    },
  },
  {
    name: 'allowList: a client IP not listed is limited as usual',
    mount: 'route',
    options: () => ({ limit: 1, window: '1m', allowList: ['10.0.0.0/8'] }),
    async run(client) {
      expect((await client.get('/items/1')).status).toBe(200);
      expect((await client.get('/items/1')).status).toBe(429);
    },
  },
  {
    name: 'policies built here, on a store given here: one quota across the routes',
    mount: 'app',
    options: (w) => ({
      policies: [{ name: 'api', algorithm: 'fixed-window', limit: 1, window: '10s' }],
      store: new MemoryStore({ clock: () => w.now }),
    }),
    async run(client) {
      // (The limiter's own clock is the real one here; Nest's module, which takes a clock, moves
      // both in its own test.)
      expect((await client.get('/items/1')).headers.ratelimit).toBe('"api";r=0;t=10');
      expect((await client.get('/other')).status).toBe(429);
    },
  },
  {
    name: 'failMode given here is the default of the policies built here that name none',
    mount: 'route',
    options: () => ({
      policies: [{ name: 'api', limit: 5, window: '1s' }],
      store: failingStore,
      failMode: 'open',
    }),
    async run(client) {
      const reply = await client.get('/items/1');
      expect(reply.status).toBe(200);
      expect((json(reply) as { rateLimit: unknown }).rateLimit).toMatchObject({
        allowed: true,
        outcome: 'unavailable',
      });
    },
  },
  {
    name: '503 problem+json when the store fails and the policy fails closed',
    mount: 'route',
    options: (w) => ({ limiter: w.limiter([{ name: 'api', limit: 5, window: '1s' }], failingStore) }),
    async run(client, _w, harness) {
      const reply = await client.get('/items/1');
      expect(reply.status).toBe(503);
      expect(mediaType(reply)).toBe('application/problem+json');
      expect(reply.headers['content-type']).toBe(harness.problemContentType);
      expect(json(reply)).toEqual(EXPECTED.unavailable());
      expect(reply.headers['cache-control']).toBe('no-store');
      expect(reply.text).not.toContain('store down');
      expect(reply.headers['retry-after']).toBeUndefined();
      expect(reply.headers.ratelimit).toBeUndefined();
    },
  },
  {
    name: 'the request goes through when the store fails and the policy fails open',
    mount: 'route',
    options: (w) => ({
      limiter: w.limiter([{ name: 'api', limit: 5, window: '1s', failMode: 'open' }], failingStore),
    }),
    async run(client) {
      const reply = await client.get('/items/1');
      expect(reply.status).toBe(200);
      expect((json(reply) as { rateLimit: { allowed: boolean; outcome: string } }).rateLimit).toMatchObject({
        allowed: true,
        outcome: 'unavailable',
      });
    },
  },
  {
    name: 'shadow: decided and visible to the handler, never enforced, no headers',
    mount: 'route',
    options: (w) => ({
      limiter: w.limiter([{ name: 'api', algorithm: 'fixed-window', limit: 1, window: '10s' }]),
      shadow: true,
    }),
    run: secondRequestShadowed,
  },
  {
    name: 'shadow on policies built here: never enforced, no headers',
    mount: 'route',
    options: () => ({ limit: 1, window: '10s', shadow: true }),
    async run(client) {
      for (let i = 0; i < 3; i++) {
        const reply = await client.get('/items/1');
        expect(reply.status).toBe(200);
        expect(reply.headers.ratelimit).toBeUndefined();
        expect((json(reply) as { rateLimit: { shadowed: boolean } }).rateLimit.shadowed).toBe(i > 0);
      }
    },
  },
  {
    name: 'shadow on listed policies built here: decided and visible to the handler, never enforced, no headers',
    mount: 'route',
    options: (w) => ({
      policies: [{ name: 'api', algorithm: 'fixed-window', limit: 1, window: '10s' }],
      store: new MemoryStore({ clock: () => w.now }),
      shadow: true,
    }),
    run: secondRequestShadowed,
  },
  {
    name: 'skip: skipped requests are neither charged nor decorated',
    mount: 'route',
    options: (w) => ({
      limiter: w.limiter([API_3_PER_10S]),
      skip: (req) => req.header('x-internal') === 'yes',
    }),
    async run(client) {
      for (let i = 0; i < 5; i++) {
        const skipped = await client.get('/items/1', { 'x-internal': 'yes' });
        expect(skipped.status).toBe(200);
        expect(skipped.headers.ratelimit).toBeUndefined();
        expect((json(skipped) as { rateLimit: unknown }).rateLimit).toBeNull();
      }
      const counted = await client.get('/items/1');
      expect(counted.headers.ratelimit).toBe('"api";r=2;t=10');
    },
  },
  {
    name: 'custom identity: each tenant has its own quota',
    mount: 'route',
    options: (w) => ({
      limiter: w.limiter([{ name: 'api', algorithm: 'fixed-window', limit: 1, window: '10s' }]),
      identity: (req) => req.header('x-tenant'),
    }),
    async run(client) {
      expect((await client.get('/items/1', { 'x-tenant': 'acme' })).status).toBe(200);
      const acmeAgain = await client.get('/items/1', { 'x-tenant': 'acme' });
      expect(acmeAgain.status).toBe(429);
      expect(acmeAgain.text).not.toContain('acme');
      expect(JSON.stringify(acmeAgain.headers)).not.toContain('acme');
      expect((await client.get('/items/1', { 'x-tenant': 'globex' })).status).toBe(200);
      expect((await client.get('/items/1')).status).toBe(200); // no tenant: the client IP
    },
  },
  ...(['key', 'app'] as const).map(identityKindScenario),
  {
    name: 'cost: a request charges its cost; a denied one charges nothing',
    mount: 'route',
    options: (w) => ({
      limiter: w.limiter([{ name: 'api', algorithm: 'fixed-window', limit: 10, window: '10s' }]),
      cost: (req) => Number(req.header('x-cost') ?? '1'),
    }),
    async run(client) {
      expect((await client.get('/items/1', { 'x-cost': '4' })).headers.ratelimit).toBe('"api";r=6;t=10');
      const tooBig = await client.get('/items/1', { 'x-cost': '7' });
      expect(tooBig.status).toBe(429);
      const rest = await client.get('/items/1', { 'x-cost': '6' });
      expect(rest.status).toBe(200);
      expect(rest.headers.ratelimit).toBe('"api";r=0;t=10');
    },
  },
  {
    name: 'the same middleware twice on one request (app-wide and on the route) charges once',
    mount: 'both',
    options: (w) => ({ limiter: w.limiter([API_3_PER_10S]) }),
    async run(client) {
      for (const remaining of [2, 1, 0]) {
        const reply = await client.get('/items/1');
        expect(reply.status).toBe(200);
        expect(reply.headers.ratelimit).toBe(`"api";r=${remaining};t=10`);
      }
      expect((await client.get('/items/1')).status).toBe(429);
    },
  },
  {
    name: 'onLimited replaces the response; the rate-limit headers stay',
    mount: 'route',
    options: (w) => ({
      limiter: w.limiter([{ name: 'api', algorithm: 'fixed-window', limit: 1, window: '10s' }]),
      teapot: true,
    }),
    async run(client) {
      expect((await client.get('/items/1')).status).toBe(200);
      const limited = await client.get('/items/1');
      expect(limited.status).toBe(418);
      expect(json(limited)).toEqual({ custom: true, status: 429, policy: 'api' });
      // The app's own body is not problem+json and must not be labelled so.
      expect(mediaType(limited)).toBe('application/json');
      expect(limited.headers['retry-after']).toBe('10');
      expect(limited.headers.ratelimit).toBe('"api";r=0;t=10');
    },
  },
  {
    name: 'route scope on a route: keyed by the matched pattern, not the URL',
    mount: 'route',
    options: (w) => ({
      limiter: w.limiter([
        { name: 'api', algorithm: 'fixed-window', limit: 1, window: '10s', scope: 'route' },
      ]),
    }),
    async run(client) {
      // Normalizing the raw paths would give two routes; the pattern gives one.
      expect((await client.get('/items/apple')).status).toBe(200);
      expect((await client.get('/items/pear?x=1')).status).toBe(429);
      expect((await client.get('/other')).status).toBe(200);
    },
  },
  {
    name: 'route scope app-wide: ids in the path are one route',
    mount: 'app',
    options: (w) => ({
      limiter: w.limiter([
        { name: 'api', algorithm: 'fixed-window', limit: 1, window: '10s', scope: 'route' },
      ]),
    }),
    async run(client, _w, harness) {
      expect((await client.get('/items/123')).status).toBe(200);
      expect((await client.get('/items/456')).status).toBe(429);
      // Another route where the pattern is known; else the one key of every unmatched request.
      expect((await client.get('/other')).status).toBe(harness.patternAppWide ? 200 : 429);
    },
  },
  {
    name: 'route scope app-wide: the matched pattern where the adapter knows it, else one key for every path',
    mount: 'app',
    options: (w) => ({
      limiter: w.limiter([
        { name: 'api', algorithm: 'fixed-window', limit: 1, window: '10s', scope: 'route' },
      ]),
    }),
    async run(client, _w, harness) {
      expect((await client.get('/items/abc')).status).toBe(200);
      // One route (`/items/:id`) where the pattern is known; the unmatched key where it is not.
      expect((await client.get('/items/def')).status).toBe(429);
      expect((await client.get('/other')).status).toBe(harness.patternAppWide ? 200 : 429);
    },
  },
  {
    name: 'header formats: legacy X-RateLimit-*',
    mount: 'route',
    options: (w) => ({ limiter: w.limiter([API_3_PER_10S]), headers: 'legacy' }),
    async run(client) {
      const reply = await client.get('/items/1');
      expect(reply.headers['x-ratelimit-limit']).toBe('3');
      expect(reply.headers['x-ratelimit-remaining']).toBe('2');
      expect(reply.headers.ratelimit).toBeUndefined();
    },
  },
  {
    name: 'headers: false sends no rate-limit headers but still limits',
    mount: 'route',
    options: (w) => ({
      limiter: w.limiter([{ name: 'api', algorithm: 'fixed-window', limit: 1, window: '10s' }]),
      headers: false,
    }),
    async run(client, _w, harness) {
      const first = await client.get('/items/1');
      expect(first.headers.ratelimit).toBeUndefined();
      expect(first.headers['ratelimit-policy']).toBeUndefined();
      const second = await client.get('/items/1');
      expect(second.status).toBe(429);
      expect(second.headers['retry-after']).toBe('10');
      expect(second.headers['content-type']).toBe(harness.problemContentType);
    },
  },
  settleScenario(),
  skipScenario('skipSuccessfulRequests'),
  skipScenario('skipFailedRequests'),
];

/**
 * Adapter bugs this table found, by harness and test name, reported to the adapter's owner.
 * They run as `test.fails`: green while the bug is there, red once it is fixed, when the entry
 * must go. Nothing else about those tests is relaxed.
 */
describe.each(HARNESSES)('$name', (harness) => {
  let served: Served | undefined;
  afterEach(async () => {
    await served?.close();
    const warnings = served?.warnings ?? [];
    served = undefined;
    // Nest's platforms warn when they rewrite an error reply's content type: none expected.
    expect(warnings).toEqual([]);
  });

  for (const scenario of SCENARIOS) {
    test(scenario.name, async () => {
      const w = world();
      served = await harness.serve(scenario.options(w), scenario.mount);
      const base = served.url;
      await scenario.run({ get: (path, headers) => request(`${base}${path}`, { headers }) }, w, harness);
    });
  }

  const constructionCases = [
    { name: 'a negative limit', options: { limit: -1, window: '1m' }, message: /"limit".*-1/ },
    { name: 'an unparsable window', options: { limit: 10, window: 'soon' }, message: /"window".*soon/ },
    {
      name: 'an unknown algorithm',
      options: { policies: [{ name: 'api', algorithm: 'leaky', limit: 1, window: '1s' }] },
      message: /algorithm.*leaky/,
    },
    {
      name: 'a policy name the shared limiter lacks',
      options: { limiter: createLimiter({ policies: [API_3_PER_10S] }), policies: ['nope'] },
      message: /"policies".*nope/,
    },
    {
      name: 'an unknown header format',
      options: { limit: 10, window: '1m', headers: 'draft-99' },
      message: /"headers".*draft-99/,
    },
    {
      name: 'an onLimited that is not a function',
      options: { limit: 10, window: '1m', onLimited: 'teapot' },
      message: /"onLimited"/,
    },
    { name: 'an unknown option', options: { limit: 10, window: '1m', windowMs: 5 }, message: /"windowMs"/ },
    {
      name: "express-rate-limit's max and windowMs, naming the Sluice option",
      options: { max: 10, windowMs: 60_000 },
      message: /"max" is not an option of .*: did you mean "limit"\?/,
    },
    {
      name: "rate-limiter-flexible's points and duration, naming the Sluice option",
      options: { points: 10, duration: 60 },
      message: /"points" is not an option of .*: did you mean "limit"\?/,
    },
    {
      name: "express-rate-limit's keyGenerator, naming the Sluice option",
      options: { limit: 10, window: '1m', keyGenerator: () => 'k' },
      message: /"keyGenerator" is not an option of .*: did you mean "identity"\?/,
    },
    {
      name: "express-rate-limit's standardHeaders, naming the Sluice option",
      options: { limit: 10, window: '1m', standardHeaders: 'draft-7' },
      message: /"standardHeaders" is not an option of .*: did you mean "headers"\?/,
    },
    {
      name: 'a cost record naming no policy',
      options: { limiter: createLimiter({ policies: [API_3_PER_10S] }), cost: { nope: 1 } },
      message: /"cost\.nope" names no policy of this middleware \(api\)/,
    },
    {
      name: 'skipFailedRequests with skipSuccessfulRequests (no request would count)',
      options: { limit: 10, window: '1m', skipFailedRequests: true, skipSuccessfulRequests: true },
      message: /"skipSuccessfulRequests" cannot be combined with "skipFailedRequests"/,
    },
    {
      name: 'requestWasSuccessful without a skip option',
      options: { limit: 10, window: '1m', requestWasSuccessful: () => true },
      message: /"requestWasSuccessful" needs "skipFailedRequests" or "skipSuccessfulRequests"/,
    },
    {
      name: 'a raw ioredis client as the store, telling how to wrap it',
      options: { limit: 10, window: '1m', store: { evalsha: async () => 0, eval: async () => 0 } },
      message: /"store" must be a Store, not a Redis client: wrap it in new RedisStore\(\{ client \}\)/,
    },
  ];
  // The policy is invalid (PolicyError) rather than an option of the adapter.
  const POLICY_ERROR_CASES = ['an unparsable window', 'an unknown algorithm'];
  for (const { name, options, message } of constructionCases) {
    test(`construction rejects ${name}`, async () => {
      // Nest rejects when the application starts; the others throw from rateLimit().
      const construct = (async () => harness.construct(options as Record<string, unknown>))();
      await expect(construct).rejects.toThrow(message);
      // Core's error classes, one for options and one for policies, each with a code.
      await expect(construct).rejects.toMatchObject({
        code: POLICY_ERROR_CASES.includes(name) ? 'INVALID_POLICY' : 'INVALID_OPTIONS',
      });
    });
  }
});
