/**
 * Express specifics over real HTTP on 127.0.0.1, on Express 5 and 4: the matched route pattern
 * with mount paths, `req.ip` under `trust proxy`, the permissive trust proxy warning, and errors
 * from user functions reaching Express's error handling. (Behaviour shared by every adapter is
 * in test/integration/adapter-scenarios.test.ts.)
 */
import { createServer, type RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLimiter, MemoryStore } from '@sluice/core';
import { resetWarnings } from '@sluice/core/adapter';
import express5, { type Express } from 'express';
import express4 from 'express4';
import { afterEach, describe, expect, test, vi } from 'vitest';
import { rateLimit } from './index.js';
import { routePattern } from './route-pattern.js';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
  vi.restoreAllMocks();
});

async function serve(app: Express): Promise<string> {
  const server = createServer(app as unknown as RequestListener);
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
  { name: 'express 5', express: express5 },
  { name: 'express 4', express: express4 },
])('$name', ({ express }) => {
  test('routePattern: the route pattern with mount paths, ids in mount paths folded', async () => {
    const app = express();
    const echo = (req: express5.Request, res: express5.Response) => {
      res.json({ pattern: routePattern(req) ?? null });
    };
    const items = express.Router();
    items.get('/', echo);
    items.get('/items/:id', echo);
    app.use('/api', items);
    app.use('/tenants/:tenant', items);
    app.get('/transfers/:id', echo);
    app.use((req, res) => {
      res.json({ pattern: routePattern(req) ?? null, unrouted: true });
    });
    const url = await serve(app);
    const pattern = async (path: string) =>
      (await (await fetch(`${url}${path}`)).json()) as { pattern: string | null };
    expect((await pattern('/transfers/42')).pattern).toBe('/transfers/:id');
    expect((await pattern('/api/items/7?q=1')).pattern).toBe('/api/items/:id');
    expect((await pattern('/api')).pattern).toBe('/api');
    expect((await pattern('/tenants/12345/items/9')).pattern).toBe('/tenants/:id/items/:id');
    expect(await pattern('/nowhere/3')).toEqual({ pattern: null, unrouted: true });
  });

  test('req.ip follows trust proxy: forwarded addresses count only when the proxy is trusted', async () => {
    const limited = (trust: string | false) => {
      const app = express();
      app.set('trust proxy', trust);
      app.get('/', rateLimit({ limiter: oneRequestLimiter() }), (_req, res) => {
        res.json({ ok: true });
      });
      return serve(app);
    };
    const trusted = await limited('loopback');
    const from = (ip: string) => ({ headers: { 'x-forwarded-for': ip } });
    expect((await fetch(trusted, from('203.0.113.1'))).status).toBe(200);
    expect((await fetch(trusted, from('203.0.113.2'))).status).toBe(200);
    expect((await fetch(trusted, from('203.0.113.1'))).status).toBe(429);

    const untrusted = await limited(false);
    expect((await fetch(untrusted, from('203.0.113.1'))).status).toBe(200);
    expect((await fetch(untrusted, from('203.0.113.2'))).status).toBe(429);
  });

  test("trust proxy true warns once, with code SLUICE_PERMISSIVE_TRUST_PROXY; 'loopback' does not", async () => {
    resetWarnings();
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const build = (trust: unknown) => {
      const app = express();
      app.set('trust proxy', trust);
      app.get('/', rateLimit({ limit: 100, window: '1m' }), (_req, res) => {
        res.json({ ok: true });
      });
      return serve(app);
    };
    const careful = await build('loopback');
    await fetch(careful);
    expect(warn).not.toHaveBeenCalled();
    const permissive = await build(true);
    await fetch(permissive);
    await fetch(permissive);
    expect(warn).toHaveBeenCalledTimes(1);
    expect(String(warn.mock.calls[0]?.[0])).toMatch(/^\[SLUICE_PERMISSIVE_TRUST_PROXY\] .*trust proxy/);
  });

  test('a throwing identity function reaches the Express error handler; the app keeps serving', async () => {
    const app = express();
    app.get(
      '/',
      rateLimit({
        limit: 100,
        window: '1m',
        identity: (req) => {
          if (req.get('x-boom')) throw new Error('identity failed');
          return 'tenant';
        },
      }),
      (_req, res) => {
        res.json({ ok: true });
      },
    );
    app.use((error: Error, _req: express5.Request, res: express5.Response, _next: express5.NextFunction) => {
      res.status(500).json({ handled: error.message });
    });
    const url = await serve(app);
    const failed = await fetch(url, { headers: { 'x-boom': '1' } });
    expect(failed.status).toBe(500);
    expect(await failed.json()).toEqual({ handled: 'identity failed' });
    expect((await fetch(url)).status).toBe(200);
  });

  test.each([
    {
      kind: 'rejecting',
      onLimited: async () => {
        throw new Error('custom response failed');
      },
    },
    {
      kind: 'throwing',
      onLimited: () => {
        throw new Error('custom response failed');
      },
    },
  ])('a $kind onLimited reaches the Express error handler', async ({ onLimited }) => {
    const app = express();
    app.get(
      '/',
      rateLimit({
        limiter: oneRequestLimiter(),
        onLimited,
      }),
      (_req, res) => {
        res.json({ ok: true });
      },
    );
    app.use((error: Error, _req: express5.Request, res: express5.Response, _next: express5.NextFunction) => {
      res.status(500).json({ handled: error.message });
    });
    const url = await serve(app);
    expect((await fetch(url)).status).toBe(200);
    const failed = await fetch(url);
    expect(failed.status).toBe(500);
    expect(await failed.json()).toEqual({ handled: 'custom response failed' });
  });
});
