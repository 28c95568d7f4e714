/**
 * What is Hono's own, over real HTTP (@hono/node-server on 127.0.0.1) with the memory store
 * and an injected clock: identityHeader and clientIp, the matched route pattern, headers on
 * raw and error responses, `c.get('rateLimit')`, construction errors. The scenario table every
 * adapter shares is test/integration/adapter-scenarios.test.ts.
 */
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { getConnInfo } from '@hono/node-server/conninfo';
import {
  createLimiter,
  type Decision,
  type Limiter,
  MemoryStore,
  type PolicyInput,
  type Store,
} from '@sluice/core';
import { type Context, Hono } from 'hono';
import { afterEach, describe, expect, it, test } from 'vitest';
import { EXPECTED, json, type Reply, readReply, request } from '../../../test/support/adapter-client.js';
import { type HonoRateLimitOptions, type RateLimitEnv, rateLimit } from './index.js';

/** A start time on a 10 s boundary, so fixed windows start with it. */
const T0 = 1_800_000_000_000;

interface World {
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

type Mount = 'route' | 'app' | 'both';

function summary(decision: Decision | undefined) {
  if (decision === undefined) return null;
  const { allowed, outcome, policy, remaining, shadowed } = decision;
  return { allowed, outcome, policy, remaining, shadowed };
}

const clientIp = (c: Context) => getConnInfo(c).remote.address;

interface Served {
  readonly url: string;
  close(): Promise<void>;
}

async function listen(app: Hono<RateLimitEnv>): Promise<Served> {
  return new Promise((done) => {
    const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info: AddressInfo) => {
      done({
        url: `http://127.0.0.1:${info.port}`,
        close: () =>
          new Promise<void>((closed) => {
            if ('closeAllConnections' in server) server.closeAllConnections();
            server.close(() => closed());
          }),
      });
    });
  });
}

/** The test app: `GET /items/:id` and `GET /other`, limited on the route, app-wide or both. */
function testApp(options: HonoRateLimitOptions, mount: Mount): Hono<RateLimitEnv> {
  const limit = rateLimit({ clientIp, ...options });
  const app = new Hono<RateLimitEnv>();
  if (mount !== 'route') app.use('*', limit);
  const echo = (c: Context<RateLimitEnv>) => c.json({ ok: true, rateLimit: summary(c.get('rateLimit')) });
  if (mount === 'app') {
    app.get('/items/:id', echo);
    app.get('/other', echo);
  } else {
    app.get('/items/:id', limit, echo);
    app.get('/other', limit, echo);
  }
  return app;
}

interface Client {
  get(path: string, headers?: Record<string, string>): Promise<Reply>;
}

interface Scenario {
  name: string;
  mount: Mount;
  options(w: World): HonoRateLimitOptions;
  run(client: Client, w: World): Promise<void>;
}

const API_3_PER_10S: PolicyInput = { name: 'api', algorithm: 'fixed-window', limit: 3, window: '10s' };
const API_1_PER_10S: PolicyInput = { name: 'api', algorithm: 'fixed-window', limit: 1, window: '10s' };

/**
 * What only Hono takes: `identityHeader`, with `clientIp` as the fallback. Everything every
 * adapter does is in the one scenario table, test/integration/adapter-scenarios.test.ts.
 */
const SCENARIOS: Scenario[] = [
  {
    name: 'identityHeader: keyed by the header; without it, by clientIp',
    mount: 'route',
    options: (w) => ({ limiter: w.limiter([API_1_PER_10S]), identityHeader: 'x-api-key' }),
    async run(client) {
      expect((await client.get('/items/1', { 'x-api-key': 'k1' })).status).toBe(200);
      expect((await client.get('/items/1', { 'x-api-key': 'k1' })).status).toBe(429);
      expect((await client.get('/items/1', { 'x-api-key': 'k2' })).status).toBe(200);
      expect((await client.get('/items/1')).status).toBe(200); // the client IP's own quota
      expect((await client.get('/items/1')).status).toBe(429);
    },
  },
  {
    name: 'identityHeader: a header spelled like the client address never shares its bucket, either way',
    mount: 'route',
    options: (w) => ({
      limiter: w.limiter([API_1_PER_10S]),
      identityHeader: 'x-api-key',
      clientIp: () => '127.0.0.1',
    }),
    async run(client, w) {
      const spoof = { 'x-api-key': '127.0.0.1' };
      expect((await client.get('/items/1', spoof)).status).toBe(200);
      expect((await client.get('/items/1')).status).toBe(200); // the key did not drain the client
      expect((await client.get('/items/1', spoof)).status).toBe(429);
      w.advance(10_000);
      expect((await client.get('/items/1')).status).toBe(200);
      expect((await client.get('/items/1', spoof)).status).toBe(200); // the client did not drain the key
      expect((await client.get('/items/1')).status).toBe(429);
    },
  },
];

let served: Served | undefined;
afterEach(async () => {
  await served?.close();
  served = undefined;
});

async function start(app: Hono<RateLimitEnv>): Promise<Client> {
  served = await listen(app);
  const base = served.url;
  return { get: (path, headers) => request(`${base}${path}`, headers === undefined ? {} : { headers }) };
}

/** Where the pass-path headers go: onto the Node response, or into Hono's prepared headers. */
const TRANSPORTS: { name: string; start(app: Hono<RateLimitEnv>): Promise<Client> }[] = [
  { name: 'over @hono/node-server (headers set on the Node response)', start },
  {
    name: 'through app.request() (Web-standard: c.header())',
    start: async (app) => ({
      get: async (path, headers) =>
        readReply(await app.request(path, headers === undefined ? {} : { headers })),
    }),
  },
];

/** The client address on Node; a fixed documentation address where there is no socket. */
const anyIp = (c: Context) =>
  (c.env as { incoming?: unknown } | undefined)?.incoming === undefined ? '192.0.2.1' : clientIp(c);

describe.each(TRANSPORTS)('rateLimit() headers on every response, $name', (transport) => {
  it('puts the headers on a raw Response a handler returns, and on error responses', async () => {
    const w = world();
    const app = new Hono<RateLimitEnv>();
    app.use('*', rateLimit({ limiter: w.limiter([API_3_PER_10S]), clientIp: anyIp }));
    app.get('/raw', () => new Response('raw', { headers: { 'x-own': '1' } }));
    app.get('/boom', () => {
      throw new Error('boom');
    });
    const client = await transport.start(app);
    const raw = await client.get('/raw');
    expect(raw.text).toBe('raw');
    expect(raw.headers['x-own']).toBe('1');
    expect(raw.headers.ratelimit).toBe('"api";r=2;t=10');
    const boom = await client.get('/boom');
    expect(boom.status).toBe(500);
    expect(boom.headers.ratelimit).toBe('"api";r=1;t=10');
  });

  it('puts the headers on raw Responses from notFound and onError handlers, and on the default 404', async () => {
    const w = world();
    const app = new Hono<RateLimitEnv>();
    app.use('*', rateLimit({ limiter: w.limiter([API_3_PER_10S]), clientIp: anyIp }));
    app.get('/boom', () => {
      throw new Error('boom');
    });
    app.notFound(() => new Response('nothing', { status: 404 }));
    app.onError(() => new Response('failed', { status: 500, headers: { 'content-type': 'text/x-own' } }));
    const client = await transport.start(app);
    const missing = await client.get('/missing');
    expect(missing.status).toBe(404);
    expect(missing.text).toBe('nothing');
    expect(missing.headers['ratelimit-policy']).toBe('"api";q=3;w=10');
    expect(missing.headers.ratelimit).toBe('"api";r=2;t=10');
    const boom = await client.get('/boom');
    expect(boom.status).toBe(500);
    expect(boom.text).toBe('failed');
    expect(boom.headers['content-type']).toBe('text/x-own');
    expect(boom.headers.ratelimit).toBe('"api";r=1;t=10');

    const plain = new Hono<RateLimitEnv>();
    plain.use('*', rateLimit({ limiter: w.limiter([API_3_PER_10S]), clientIp: anyIp }));
    await served?.close();
    const plainClient = await transport.start(plain);
    const notFound = await plainClient.get('/missing');
    expect(notFound.status).toBe(404);
    expect(notFound.headers.ratelimit).toBe('"api";r=2;t=10');
  });

  it('never writes the headers into a Response object the handler reuses across requests', async () => {
    const w = world();
    const shared = new Response(null, { status: 204, headers: { 'x-own': '1' } });
    const app = new Hono<RateLimitEnv>();
    app.use('*', rateLimit({ limiter: w.limiter([API_3_PER_10S]), clientIp: anyIp }));
    app.get('/shared', () => shared);
    const client = await transport.start(app);
    for (const remaining of [2, 1, 0]) {
      const reply = await client.get('/shared');
      expect(reply.status).toBe(204);
      expect(reply.headers['x-own']).toBe('1');
      expect(reply.headers.ratelimit).toBe(`"api";r=${remaining};t=10`);
    }
    expect(shared.headers.get('ratelimit')).toBeNull();
    expect((await client.get('/shared')).status).toBe(429);
  });

  it('raw Responses under shadow policies and with headers: false get no rate-limit headers', async () => {
    const w = world();
    const app = new Hono<RateLimitEnv>();
    app.use(
      '/shadow',
      rateLimit({ limiter: w.limiter([{ ...API_1_PER_10S, shadow: true }]), clientIp: anyIp }),
    );
    app.use('/off', rateLimit({ limiter: w.limiter([API_3_PER_10S]), headers: false, clientIp: anyIp }));
    const raw = () => new Response('raw');
    app.get('/shadow', raw);
    app.get('/off', raw);
    const client = await transport.start(app);
    for (const path of ['/shadow', '/shadow', '/off']) {
      const reply = await client.get(path);
      expect(reply.status).toBe(200);
      expect(reply.text).toBe('raw');
      expect(reply.headers.ratelimit).toBeUndefined();
      expect(reply.headers['ratelimit-policy']).toBeUndefined();
    }
  });

  it("lets a header of the same name from the app win over the limiter's", async () => {
    const w = world();
    const app = new Hono<RateLimitEnv>();
    app.use('*', rateLimit({ limiter: w.limiter([API_3_PER_10S]), clientIp: anyIp }));
    app.get('/own', (c) => {
      c.header('RateLimit', '"app";r=1');
      return c.json({ ok: true });
    });
    const client = await transport.start(app);
    const reply = await client.get('/own');
    expect(reply.status).toBe(200);
    expect(reply.headers.ratelimit).toBe('"app";r=1');
    expect(reply.headers['ratelimit-policy']).toBe('"api";q=3;w=10');
  });
});

describe('rateLimit() on Hono over HTTP', () => {
  test.each(SCENARIOS)('$name', async (scenario) => {
    const w = world();
    const client = await start(testApp(scenario.options(w), scenario.mount));
    await scenario.run(client, w);
  });

  it('each 429 body matches its own decision when consecutive denials differ', async () => {
    const w = world();
    const app = new Hono<RateLimitEnv>();
    const bucket: PolicyInput = { name: 'api', algorithm: 'token-bucket', limit: 1, window: '10s' };
    app.use('*', rateLimit({ limiter: w.limiter([bucket]), identityHeader: 'x-tenant' }));
    app.get('/x', (c) => c.text('ok'));
    const client = await start(app);
    const as = (tenant: string) => client.get('/x', { 'x-tenant': tenant });
    expect((await as('a')).status).toBe(200);
    expect(json(await as('a'))).toEqual(EXPECTED.tooManyRequests(['api'], 'api', 10));
    expect(json(await as('a'))).toEqual(EXPECTED.tooManyRequests(['api'], 'api', 10));
    w.advance(3000);
    expect((await as('b')).status).toBe(200);
    for (let i = 0; i < 2; i++) {
      const a = await as('a');
      expect(a.headers['retry-after']).toBe('7');
      expect(json(a)).toEqual(EXPECTED.tooManyRequests(['api'], 'api', 7));
      const b = await as('b');
      expect(b.headers['retry-after']).toBe('10');
      expect(json(b)).toEqual(EXPECTED.tooManyRequests(['api'], 'api', 10));
    }
  });

  it('route key through sub-apps and wildcard middleware: the pattern of the answering route', async () => {
    const w = world();
    const limiter = w.limiter([{ ...API_1_PER_10S, scope: 'route' }]);
    const api = new Hono<RateLimitEnv>();
    api.get('/items/:id', (c) => c.json({ ok: true }));
    api.post('/items/:id', (c) => c.json({ ok: true }));
    const app = new Hono<RateLimitEnv>();
    app.use('/api/*', rateLimit({ limiter, clientIp }));
    app.route('/api', api);
    const client = await start(app);
    const base = served?.url;
    expect((await client.get('/api/items/1')).status).toBe(200);
    expect((await client.get('/api/items/2')).status).toBe(429);
    expect((await request(`${base}/api/items/3`, { method: 'POST' })).status).toBe(200); // POST is its own route
    expect((await client.get('/api/nothing-here/1')).status).toBe(404); // unmatched: folded path, still answered
  });
});

describe('rateLimit() construction', () => {
  test.each([
    [{ limit: 10, window: '1m' }, /"identity".*"identityHeader".*"clientIp"/],
    [
      { limit: 10, window: '1m', identityHeader: 'bad header' },
      /"identityHeader" must be a header name, got "bad header"/,
    ],
    [{ limit: 10, window: '1m', identityHeader: '' }, /"identityHeader" must be a header name, got ""$/],
    [
      { max: 10, windowMs: 60_000, identityHeader: 'x' },
      /"max" is not an option of hono rateLimit\(\): did you mean "limit"\?/,
    ],
    [
      { limit: 10, window: '1m', identityHeadr: 'x', clientIp: () => '1.2.3.4' },
      /"identityHeadr" is not an option of hono rateLimit\(\): did you mean "identityHeader"\?/,
    ],
    [{ limit: 10, window: '1m', clientIp: 'x' }, /"clientIp" must be a function/],
    [
      { limit: 10, window: '1m', identityHeader: 'x-api-key', onLimited: 'teapot' },
      /"onLimited" must be a function/,
    ],
    [{ limit: -1, window: '1m', identityHeader: 'x-api-key' }, /"limit".*-1/],
    [{ limit: 10, window: 'soon', identityHeader: 'x-api-key' }, /"window".*soon/],
    [
      { policies: [{ name: 'api', algorithm: 'leaky', limit: 1, window: '1s' }], identityHeader: 'x' },
      /algorithm.*leaky/,
    ],
    [
      { limiter: createLimiter({ policies: [API_3_PER_10S] }), policies: ['nope'], identityHeader: 'x' },
      /nope/,
    ],
    [{ limit: 10, window: '1m', headers: 'draft-99', identityHeader: 'x' }, /"headers".*draft-99/],
  ] as const)('rejects %o', (options, message) => {
    expect(() => rateLimit(options as unknown as HonoRateLimitOptions)).toThrow(message);
    // Core's error classes, each with a code: options (RateLimitOptionsError) or a policy (PolicyError).
    expect(() => rateLimit(options as unknown as HonoRateLimitOptions)).toThrow(
      expect.objectContaining({ code: expect.stringMatching(/^INVALID_(OPTIONS|POLICY)$/) }),
    );
  });

  it('rejects a missing options object', () => {
    expect(() => rateLimit(undefined as unknown as HonoRateLimitOptions)).toThrow(
      'rateLimit: "options" must be an object, or a function of the context returning one, got undefined',
    );
  });

  it('builds options from a context again after a factory threw at once (the next request is limited)', async () => {
    let calls = 0;
    const app = new Hono();
    app.use(
      '*',
      rateLimit(() => {
        calls++;
        if (calls === 1) throw new Error('bindings not ready');
        return { limit: 1, window: '1m', clientIp: () => '203.0.113.9' };
      }),
    );
    app.get('/', (c) => c.text('ok'));
    expect((await app.request('/')).status).toBe(500);
    expect((await app.request('/')).status).toBe(200);
    expect((await app.request('/')).status).toBe(429);
    expect(calls).toBe(2);
  });
});
