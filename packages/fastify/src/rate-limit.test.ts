/**
 * Fastify specifics on a real Fastify 5 server over HTTP on 127.0.0.1: the plugin's scope
 * (routes declared before it, route groups through encapsulation, `config.rateLimit`), the
 * route pattern as the route key, `hook: 'preHandler'` after authentication, `request.ip` under
 * `trustProxy`, `onLimited`, and bad options failing the start. (Behaviour shared by every
 * adapter is in test/integration/adapter-scenarios.test.ts.)
 */
import { createLimiter, type Limiter, MemoryStore } from '@sluice/core';
import { PROBLEM_CONTENT_TYPE } from '@sluice/core/adapter';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { afterEach, describe, expect, test } from 'vitest';
import { rateLimit } from './index.js';

const apps: FastifyInstance[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close()));
});

const clock = () => 1_800_000_000_000;

/** A limiter on a frozen clock: `api` (1 per 10 s per identity), `route` (1 per 10 s per identity and route). */
function limiter(): Limiter {
  return createLimiter({
    policies: [
      { name: 'api', algorithm: 'fixed-window', limit: 1, window: '10s' },
      { name: 'route', algorithm: 'fixed-window', limit: 1, window: '10s', scope: 'route' },
      { name: 'wide', algorithm: 'fixed-window', limit: 100, window: '10s' },
    ],
    store: new MemoryStore({ clock }),
    clock,
  });
}

function app(options: FastifyServerOptions = {}): FastifyInstance {
  const fastify = Fastify(options);
  apps.push(fastify);
  return fastify;
}

async function listen(fastify: FastifyInstance): Promise<string> {
  await fastify.listen({ port: 0, host: '127.0.0.1' });
  const address = fastify.server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return `http://127.0.0.1:${address.port}`;
}

const statuses = async (url: string, paths: string[], init?: RequestInit) => {
  const seen: number[] = [];
  for (const path of paths) seen.push((await fetch(`${url}${path}`, init)).status);
  return seen;
};

describe('@sluice/fastify', () => {
  test('denies with the problem+json 429, headers and request.rateLimit; the route key is the pattern', async () => {
    const fastify = app();
    await fastify.register(rateLimit, { limiter: limiter(), policies: ['route'] });
    fastify.get('/items/:id', async (request) => ({ policy: request.rateLimit?.policy ?? null }));
    fastify.get('/other', async () => ({ ok: true }));
    const url = await listen(fastify);
    const first = await fetch(`${url}/items/1`);
    expect(first.status).toBe(200);
    expect(await first.json()).toEqual({ policy: 'route' });
    expect(first.headers.get('ratelimit-policy')).toBe('"route";q=1;w=10');
    const denied = await fetch(`${url}/items/2`);
    expect(denied.status).toBe(429);
    expect(denied.headers.get('content-type')).toBe(`${PROBLEM_CONTENT_TYPE}; charset=utf-8`);
    expect(denied.headers.get('retry-after')).toBe('10');
    expect(denied.headers.get('cache-control')).toBe('no-store');
    expect(await denied.json()).toMatchObject({ error: 'rate limit exceeded', policy: 'route', status: 429 });
    // Another route pattern is another budget; an unmatched path is limited too (404 probing).
    expect(await statuses(url, ['/other', '/other', '/nowhere/1', '/nowhere/2'])).toEqual([
      200, 429, 404, 429,
    ]);
  });

  test('limits routes declared before the plugin in its scope; config.rateLimit false leaves a route alone', async () => {
    const fastify = app();
    fastify.get('/early', async () => ({ ok: true }));
    fastify.get('/early-own', { config: { rateLimit: { policies: ['wide'] } } }, async () => ({ ok: true }));
    await fastify.register(rateLimit, { limiter: limiter(), policies: ['route'] });
    fastify.get('/free', { config: { rateLimit: false } }, async () => ({ ok: true }));
    const url = await listen(fastify);
    expect(await statuses(url, ['/early', '/early'])).toEqual([200, 429]);
    expect(await statuses(url, ['/early-own', '/early-own', '/early-own'])).toEqual([200, 200, 200]);
    expect(await statuses(url, ['/free', '/free', '/free'])).toEqual([200, 200, 200]);
  });

  test("a route's config.rateLimit is merged over the plugin's options; global: false limits only such routes", async () => {
    const fastify = app();
    await fastify.register(rateLimit, { limiter: limiter(), global: false });
    fastify.get('/wide', { config: { rateLimit: { policies: ['wide'] } } }, async () => ({ ok: true }));
    fastify.get('/tight', { config: { rateLimit: { policies: ['api'] } } }, async () => ({ ok: true }));
    fastify.get('/open', async (request) => ({ limited: request.rateLimit !== null }));
    fastify.get('/own', { config: { rateLimit: { limit: 2, window: '1m' } } }, async () => ({ ok: true }));
    const url = await listen(fastify);
    expect(await statuses(url, ['/wide', '/wide', '/wide'])).toEqual([200, 200, 200]);
    expect(await statuses(url, ['/tight', '/tight'])).toEqual([200, 429]);
    expect(await (await fetch(`${url}/open`)).json()).toEqual({ limited: false });
    expect(await statuses(url, ['/own', '/own', '/own'])).toEqual([200, 200, 429]);
  });

  test('one options object on routes of two apps, and a route inside a group under a root plugin, each limited once', async () => {
    const own = { policies: ['api'] };
    const shared = limiter();
    const urls: string[] = [];
    for (let i = 0; i < 2; i++) {
      const fastify = app();
      await fastify.register(rateLimit, { limiter: limiter(), global: false });
      fastify.get('/', { config: { rateLimit: own } }, async () => ({ ok: true }));
      urls.push(await listen(fastify));
    }
    expect([...(await statuses(urls[0]!, ['/', '/'])), ...(await statuses(urls[1]!, ['/', '/']))]).toEqual([
      200, 429, 200, 429,
    ]);
    // The group's registration owns the route's options; the root's names a policy the group's limiter lacks.
    const fastify = app();
    await fastify.register(rateLimit, { limiter: shared, policies: ['wide'] });
    await fastify.register(async (group) => {
      await group.register(rateLimit, { limit: 100, window: '1m' });
      group.get('/grouped', { config: { rateLimit: { limit: 1, window: '1m' } } }, async () => ({
        ok: true,
      }));
    });
    const url = await listen(fastify);
    expect(await statuses(url, ['/grouped', '/grouped'])).toEqual([200, 429]);
  });

  test('a route group: registered inside a plugin, it limits that plugin and not its siblings', async () => {
    const fastify = app();
    const shared = limiter();
    await fastify.register(
      async (api) => {
        await api.register(rateLimit, { limiter: shared, policies: ['api'] });
        api.get('/a', async () => ({ ok: true }));
        api.get('/b', async () => ({ ok: true }));
      },
      { prefix: '/api' },
    );
    fastify.get('/public', async () => ({ ok: true }));
    const url = await listen(fastify);
    // One identity-scoped budget across the group.
    expect(await statuses(url, ['/api/a', '/api/b', '/public', '/public'])).toEqual([200, 429, 200, 200]);
  });

  test("hook: 'preHandler' keys by what an authentication hook set, even one added after the plugin", async () => {
    const fastify = app();
    fastify.decorateRequest('tenant', '');
    await fastify.register(rateLimit, {
      limiter: limiter(),
      policies: ['api'],
      hook: 'preHandler',
      identity: (request) => ({ kind: 'key', value: (request as unknown as { tenant: string }).tenant }),
    });
    fastify.addHook('onRequest', async (request) => {
      (request as unknown as { tenant: string }).tenant = String(request.headers['x-tenant'] ?? 'anonymous');
    });
    fastify.get('/', async () => ({ ok: true }));
    const url = await listen(fastify);
    const as = (tenant: string) => ({ headers: { 'x-tenant': tenant } });
    expect(await statuses(url, ['/', '/'], as('t1'))).toEqual([200, 429]);
    expect(await statuses(url, ['/'], as('t2'))).toEqual([200]);
  });

  test('request.ip follows trustProxy: a forwarded address counts only behind a trusted proxy', async () => {
    const run = async (trustProxy: boolean) => {
      const fastify = app({ trustProxy });
      await fastify.register(rateLimit, { limiter: limiter(), policies: ['api'] });
      fastify.get('/', async () => ({ ok: true }));
      const url = await listen(fastify);
      const from = (ip: string) => ({ headers: { 'x-forwarded-for': ip } });
      return [
        ...(await statuses(url, ['/'], from('203.0.113.1'))),
        ...(await statuses(url, ['/'], from('203.0.113.2'))),
      ];
    };
    expect(await run(true)).toEqual([200, 200]);
    expect(await run(false)).toEqual([200, 429]);
  });

  test('onLimited answers denials; a throw reaches the error handler; an unsent reply goes on', async () => {
    const fastify = app();
    await fastify.register(rateLimit, {
      limiter: limiter(),
      policies: ['route'],
      onLimited: (request, reply, verdict) => {
        if (request.url === '/throws') throw new Error('boom');
        if (request.url === '/passes') return;
        return reply
          .code(verdict.status)
          .send({ slowDown: verdict.headers['retry-after'] ?? verdict.headers['Retry-After'] });
      },
    });
    for (const path of ['/answers', '/throws', '/passes']) fastify.get(path, async () => ({ ok: true }));
    const url = await listen(fastify);
    await statuses(url, ['/answers', '/throws', '/passes']);
    const answered = await fetch(`${url}/answers`);
    expect(answered.status).toBe(429);
    expect(answered.headers.get('retry-after')).toBe('10');
    expect(await answered.json()).toEqual({ slowDown: '10' });
    expect((await fetch(`${url}/throws`)).status).toBe(500);
    expect((await fetch(`${url}/passes`)).status).toBe(200);
  });

  test('bad options fail the start, naming the option and the value', async () => {
    await expect(
      app().register(rateLimit, { limiter: limiter(), hook: 'onSend' as 'onRequest' }),
    ).rejects.toThrow(/"hook" must be 'onRequest' or 'preHandler', got "onSend"/);
    await expect(app().register(rateLimit, { max: 10 } as never)).rejects.toThrow(
      /"max".*did you mean "limit"/,
    );
    await expect(app().register(rateLimit, { limit: -1, window: '1m' })).rejects.toThrow(
      /"limit" must be a positive integer, got -1/,
    );
    const fastify = app();
    await fastify.register(rateLimit, { limiter: limiter() });
    fastify.get('/', { config: { rateLimit: { policies: ['nope'] } } }, async () => ({ ok: true }));
    await expect(fastify.ready()).rejects.toThrow(/"policies" must name a policy of the limiter/);
    // Declared before the plugin: its options are first seen at its first request.
    const early = app();
    early.get('/', { config: { rateLimit: { policies: ['nope'] } } }, async () => ({ ok: true }));
    await early.register(rateLimit, { limiter: limiter() });
    const reply = await fetch(await listen(early));
    expect(reply.status).toBe(500);
    expect(((await reply.json()) as { message: string }).message).toMatch(/"policies" must name a policy/);
  });
});
