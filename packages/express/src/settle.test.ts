import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLimiter, MemoryStore, type PolicyInput } from '@sluice/core';
import type { Express } from 'express';
import express from 'express';
import { describe, expect, it } from 'vitest';
import { rateLimit } from './index.js';

/** Waits until `done()` holds: a settle runs after the response (or the connection) ended. */
async function until(done: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 400 && !(await done()); i++) await new Promise((resolve) => setTimeout(resolve, 5));
  expect(await done()).toBe(true);
}

describe('settle on Express', () => {
  it('settles a request whose client dropped the connection mid-response, as not completed', async () => {
    const now = 1_800_000_000_000;
    const clock = () => now;
    const limiter = createLimiter({
      policies: [{ name: 'api', algorithm: 'fixed-window', limit: 10, window: '1m' }],
      store: new MemoryStore({ clock }),
      clock,
    });
    const seen: { statusCode: number; completed: boolean }[] = [];
    const app = express();
    app.get(
      '/slow',
      rateLimit({
        limiter,
        identity: () => 'tenant',
        cost: 5,
        settle: (_req, response) => {
          seen.push(response);
          return 0;
        },
      }),
      (_req, res) => {
        res.status(200).write('part');
        // Never ends: the client goes away first.
      },
    );
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const { port } = server.address() as AddressInfo;
    try {
      await new Promise<void>((done, fail) => {
        const req = httpRequest({ host: '127.0.0.1', port, path: '/slow' }, (res) => {
          res.once('data', () => {
            req.destroy();
            done();
          });
        });
        req.on('error', () => {});
        req.once('timeout', () => fail(new Error('timeout')));
        req.end();
      });
      await until(() => seen.length === 1);
      expect(seen).toEqual([{ statusCode: 200, completed: false }]);
      expect((await limiter.peek({ identity: 'tenant' })).remaining).toBe(10);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('settles the enforced policy beside a shadow one that denies (reserve 100, use 1000)', async () => {
    const spent = async (policies: PolicyInput[]) => {
      let now = 1_800_000_000_000;
      const clock = () => now;
      const limiter = createLimiter({ policies, store: new MemoryStore({ clock }), clock });
      const app = express();
      let settled = 0;
      app.post(
        '/generate',
        rateLimit({
          limiter,
          identity: () => 'tenant',
          cost: { tokens: 100 },
          settle: () => {
            settled += 1;
            return { tokens: 1000 };
          },
        }),
        (_req, res) => {
          res.json({ ok: true });
        },
      );
      const statuses: number[] = [];
      await serving(app, async (base) => {
        for (let i = 0; i < 20; i++, now += 10_000) {
          statuses.push((await fetch(`${base}/generate`, { method: 'POST' })).status);
          await until(() => settled === statuses.filter((s) => s === 200).length);
        }
      });
      return statuses.filter((s) => s === 200).length * 1000;
    };
    const tokens: PolicyInput = { name: 'tokens', algorithm: 'token-bucket', burst: 1000, rate: '10/s' };
    const probe: PolicyInput = {
      name: 'probe',
      algorithm: 'fixed-window',
      limit: 1,
      window: '1h',
      shadow: true,
    };
    expect(await spent([tokens])).toBe(3000);
    expect(await spent([tokens, probe])).toBe(3000);
  });

  it('refunds successful logins beside a shadow policy (skipSuccessfulRequests)', async () => {
    const now = 1_800_000_000_000;
    const clock = () => now;
    const limiter = createLimiter({
      policies: [
        { name: 'login', algorithm: 'fixed-window', limit: 5, window: '1m' },
        { name: 'login-probe', algorithm: 'fixed-window', limit: 2, window: '1m', shadow: true },
      ],
      store: new MemoryStore({ clock }),
      clock,
    });
    const app = express();
    app.post(
      '/login',
      rateLimit({ limiter, identity: () => 'client', skipSuccessfulRequests: true }),
      (req, res) => {
        res.status(req.query.ok === '1' ? 200 : 401).json({ ok: req.query.ok === '1' });
      },
    );
    await serving(app, async (base) => {
      const left = async () => (await limiter.peek({ identity: 'client' })).results[0]?.remaining;
      const login = async (ok: boolean) =>
        (await fetch(`${base}/login?ok=${ok ? 1 : 0}`, { method: 'POST' })).status;
      expect([await login(false), await login(false)]).toEqual([401, 401]);
      expect(await left()).toBe(3);
      const successes: number[] = [];
      for (let i = 0; i < 10; i++) {
        successes.push(await login(true));
        // The settle runs after the response: the two failures are all that count, 3 left.
        await until(async () => (await left()) === 3);
      }
      expect(successes).toEqual(Array(10).fill(200));
    });
  });
});

/** Runs `body` against `app` listening on a free loopback port, then closes it. */
async function serving(app: Express, body: (base: string) => Promise<void>): Promise<void> {
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  try {
    await body(`http://127.0.0.1:${port}`);
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}
