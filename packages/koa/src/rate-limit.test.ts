/**
 * Koa specifics over real HTTP on 127.0.0.1, on Koa 3 and 2: the pattern @koa/router matched
 * (prefixes included), `ctx.ip` under `app.proxy` / `app.maxIpsCount`, the permissive proxy
 * warning, and errors from user functions reaching Koa's error handling. (Behaviour shared by
 * every adapter is in test/integration/adapter-scenarios.test.ts.)
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import Router from '@koa/router';
import { createLimiter, MemoryStore } from '@sluice/core';
import { resetWarnings } from '@sluice/core/adapter';
import Koa3 from 'koa';
import Koa2 from 'koa2';
import { afterEach, describe, expect, test, vi } from 'vitest';
import { rateLimit } from './index.js';
import { matchedRoute } from './matched-route.js';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
  vi.restoreAllMocks();
});

async function serve(app: Koa3): Promise<string> {
  const server = createServer(app.callback());
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  closers.push(
    () =>
      new Promise((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  );
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const oneRequestLimiter = () => {
  const clock = () => 1_800_000_000_000;
  return createLimiter({
    policies: [{ name: 'api', algorithm: 'fixed-window', limit: 1, window: '10s' }],
    store: new MemoryStore({ clock }),
    clock,
  });
};

describe.each([
  { name: 'koa 3', Koa: Koa3 },
  { name: 'koa 2', Koa: Koa2 },
])('$name', ({ Koa }) => {
  test('matchedRoute: the pattern the router matched, prefixes included; undefined before routing', async () => {
    const app = new Koa();
    const seenBeforeRouting: (string | null)[] = [];
    app.use(async (ctx, next) => {
      seenBeforeRouting.push(matchedRoute(ctx) ?? null);
      await next();
    });
    const echo = (ctx: Koa3.Context) => {
      ctx.body = { pattern: matchedRoute(ctx) ?? null };
    };
    const api = new Router({ prefix: '/api' });
    const seenInUse: (string | null)[] = [];
    api.use(async (ctx, next) => {
      seenInUse.push(matchedRoute(ctx) ?? null);
      await next();
    });
    api.get('/items/:id', echo);
    api.post('/items/:id/archive', echo);
    const root = new Router();
    root.get('/transfers/:id', echo);
    app.use(api.routes()).use(root.routes());
    const url = await serve(app);
    const pattern = async (path: string) =>
      ((await (await fetch(`${url}${path}`)).json()) as { pattern: string }).pattern;
    expect(await pattern('/transfers/42')).toBe('/transfers/:id');
    expect(await pattern('/api/items/7?q=1')).toBe('/api/items/:id');
    expect(seenBeforeRouting).toEqual([null, null]);
    // In a router.use() layer the route is the one the request will reach, not the use layer's path.
    expect(seenInUse).toEqual(['/api/items/:id']);
  });

  test('ctx.ip follows app.proxy: forwarded addresses count only when the proxy is trusted', async () => {
    const limited = (proxy: boolean) => {
      const app = new Koa({ proxy, maxIpsCount: 1 });
      app.use(rateLimit({ limiter: oneRequestLimiter() }));
      app.use((ctx) => {
        ctx.body = { ok: true };
      });
      return serve(app);
    };
    const from = (ip: string) => ({ headers: { 'x-forwarded-for': ip } });
    const trusted = await limited(true);
    expect((await fetch(trusted, from('203.0.113.1'))).status).toBe(200);
    expect((await fetch(trusted, from('203.0.113.2'))).status).toBe(200);
    expect((await fetch(trusted, from('203.0.113.1'))).status).toBe(429);

    const untrusted = await limited(false);
    expect((await fetch(untrusted, from('203.0.113.1'))).status).toBe(200);
    expect((await fetch(untrusted, from('203.0.113.2'))).status).toBe(429);
  });

  test('app.proxy without maxIpsCount warns once with code SLUICE_PERMISSIVE_TRUST_PROXY; with it, no warning', async () => {
    resetWarnings();
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const build = (options: { proxy: boolean; maxIpsCount?: number }) => {
      const app = new Koa(options);
      app.use(rateLimit({ limit: 100, window: '1m' }));
      app.use((ctx) => {
        ctx.body = { ok: true };
      });
      return serve(app);
    };
    await fetch(await build({ proxy: true, maxIpsCount: 1 }));
    await fetch(await build({ proxy: false }));
    expect(warn).not.toHaveBeenCalled();
    const permissive = await build({ proxy: true });
    await fetch(permissive);
    await fetch(permissive);
    expect(warn).toHaveBeenCalledTimes(1);
    expect(String(warn.mock.calls[0]?.[0])).toMatch(/^\[SLUICE_PERMISSIVE_TRUST_PROXY\] .*app\.proxy/);
  });

  test('a throwing identity function becomes a Koa error (500); the app keeps serving', async () => {
    const app = new Koa();
    app.silent = true;
    app.use(
      rateLimit({
        limit: 100,
        window: '1m',
        identity: (ctx) => {
          if (ctx.get('x-boom')) throw new Error('identity failed');
          return 'tenant';
        },
      }),
    );
    app.use((ctx) => {
      ctx.body = { ok: true };
    });
    const url = await serve(app);
    const failed = await fetch(url, { headers: { 'x-boom': '1' } });
    expect(failed.status).toBe(500);
    expect(await failed.text()).not.toContain('identity failed');
    expect((await fetch(url)).status).toBe(200);
  });
});
