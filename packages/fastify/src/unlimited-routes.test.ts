/**
 * The startup report of routes the plugin does not limit (`SLUICE_ROUTES_NOT_LIMITED`), on real
 * Fastify 5 apps over HTTP on 127.0.0.1: routes of plugins loaded before it are named, routes of
 * its scope (declared before or after it, `config.rateLimit: false` included) are not.
 */
import { createLimiter, type LogEntry, MemoryStore, WARNING_CODES } from '@sluice/core';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, test } from 'vitest';
import { rateLimit } from './index.js';

const apps: FastifyInstance[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close()));
});

const clock = () => 1_800_000_000_000;

/** A fresh app and the plugin options (1 request per 10 s per route) reporting to `entries`. */
function setup(hook: 'onRequest' | 'preHandler' = 'onRequest') {
  const fastify = Fastify();
  apps.push(fastify);
  const entries: LogEntry[] = [];
  const limiter = createLimiter({
    policies: [{ name: 'route', algorithm: 'fixed-window', limit: 1, window: '10s', scope: 'route' }],
    store: new MemoryStore({ clock }),
    clock,
  });
  const options = { limiter, hook, logger: { warn: (entry: LogEntry) => void entries.push(entry) } };
  return { fastify, entries, options };
}

/** Starts the app on a free loopback port (the start reports); its base URL. */
async function listen(fastify: FastifyInstance): Promise<string> {
  await fastify.listen({ port: 0, host: '127.0.0.1' });
  const address = fastify.server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return `http://127.0.0.1:${address.port}`;
}

/** `METHOD /path` (or `/path` for GET) one after another, over HTTP: their statuses. */
async function statuses(url: string, requests: string[]): Promise<number[]> {
  const seen: number[] = [];
  for (const request of requests) {
    const [method, path] = request.includes(' ') ? request.split(' ') : ['GET', request];
    seen.push((await fetch(`${url}${path}`, { method })).status);
  }
  return seen;
}

const ok = async () => ({ ok: true });

describe('routes the plugin does not limit are reported at startup', () => {
  for (const hook of ['onRequest', 'preHandler'] as const) {
    test(`a group names the routes under its prefix it does not reach; its own scope, before or after, and rateLimit: false are not named (${hook})`, async () => {
      const { fastify, entries, options } = setup(hook);
      fastify.get('/api/health', ok);
      await fastify.register(async (v1) => void v1.post('/old/:id', ok), { prefix: '/api/v1' });
      fastify.get('/public', ok);
      fastify.get('/apiary', ok);
      fastify.route({ method: ['PUT', 'DELETE'], url: '/api/files/*', handler: ok });
      fastify.route({ method: 'GET', url: '/api/late', constraints: { version: '2.0.0' }, handler: ok });
      await fastify.register(
        async (api) => {
          api.get('/early', ok);
          await api.register(async (child) => void child.get('/child/:id', ok));
          await api.register(rateLimit, options);
          api.get('/free', { config: { rateLimit: false } }, ok);
          api.get('/late', ok);
          await api.register(async (child) => void child.get('/after', ok));
        },
        { prefix: '/api' },
      );
      const url = await listen(fastify);
      expect(entries).toHaveLength(1);
      expect(entries[0]?.code).toBe(WARNING_CODES.ROUTES_NOT_LIMITED);
      expect(entries[0]?.code).toBe('SLUICE_ROUTES_NOT_LIMITED');
      expect(entries[0]?.fields).toEqual({ adapter: 'fastify', routes: 5 });
      expect(entries[0]?.message).toBe(
        '5 route(s) not rate limited by @sluice/fastify: GET /api/health, POST /api/v1/old/:id, ' +
          'PUT /api/files/*, DELETE /api/files/*, GET /api/late {"version":"2.0.0"}. ' +
          'Move them into the group, or register the plugin in their scope too (at the root it limits every route).',
      );
      // What the report says is what happens.
      expect(
        await statuses(url, [
          '/api/health',
          '/api/health',
          'POST /api/v1/old/1',
          'POST /api/v1/old/2',
          '/public',
          '/public',
        ]),
      ).toEqual([200, 200, 200, 200, 200, 200]);
      expect(
        await statuses(url, [
          '/api/early',
          '/api/early',
          '/api/child/1',
          '/api/child/2',
          '/api/late',
          '/api/late',
          '/api/after',
          '/api/after',
        ]),
      ).toEqual([200, 429, 200, 429, 200, 429, 200, 429]);
      expect(await statuses(url, ['/api/free', '/api/free'])).toEqual([200, 200]);
    });
  }

  test('at the root, routes of plugins loaded before it are reached too: nothing to report', async () => {
    const { fastify, entries, options } = setup();
    fastify.get('/early', ok);
    await fastify.register(async (child) => void child.get('/child', ok), { prefix: '/v1' });
    await fastify.register(rateLimit, options);
    const url = await listen(fastify);
    expect(entries).toEqual([]);
    // An unprefixed group cannot tell its routes from the app's: it reports nothing.
    const group = setup();
    group.fastify.get('/public', ok);
    await group.fastify.register(async (api) => {
      await api.register(rateLimit, group.options);
      api.get('/a', ok);
    });
    await listen(group.fastify);
    expect(group.entries).toEqual([]);
    expect(await statuses(url, ['/early', '/early', '/v1/child', '/v1/child'])).toEqual([200, 429, 200, 429]);
  });
});
