import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLimiter, MemoryStore } from '@sluice/core';
import express from 'express';
import { describe, expect, it } from 'vitest';
import { rateLimit } from './index.js';

/** Waits until `done()` holds: a settle runs after the response (or the connection) ended. */
async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 400 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
  expect(done()).toBe(true);
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
});
