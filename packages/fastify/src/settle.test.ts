/**
 * Settling on Fastify: a request whose client went away mid-response is settled once, as not
 * completed; one answered in full is settled as completed, with the reply's status.
 */
import { request as httpRequest } from 'node:http';
import { PassThrough } from 'node:stream';
import { createLimiter, MemoryStore } from '@sluice/core';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { rateLimit } from './index.js';

/** Waits until `done()` holds: a settle runs after the response (or the connection) ended. */
async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 400 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
  expect(done()).toBe(true);
}

describe('settle on Fastify', () => {
  it('settles a finished reply as completed and a dropped one as not, each once', async () => {
    const clock = () => 1_800_000_000_000;
    const limiter = createLimiter({
      policies: [{ name: 'api', algorithm: 'fixed-window', limit: 10, window: '1m' }],
      store: new MemoryStore({ clock }),
      clock,
    });
    const seen: { url: string; statusCode: number; completed: boolean }[] = [];
    const app = Fastify();
    await app.register(rateLimit, {
      limiter,
      identity: () => 'tenant',
      cost: 5,
      settle: (request, response) => {
        seen.push({ url: request.url, ...response });
        return request.url === '/slow' ? 0 : 1;
      },
    });
    app.get('/done', async (_request, reply) => reply.code(201).send({ ok: true }));
    app.get('/slow', async (_request, reply) => {
      const body = new PassThrough();
      body.write('part'); // never ended: the client goes away first
      return reply.send(body);
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as { port: number };
    try {
      expect((await fetch(`http://127.0.0.1:${port}/done`)).status).toBe(201);
      await until(() => seen.length === 1);
      await new Promise<void>((done) => {
        const req = httpRequest({ host: '127.0.0.1', port, path: '/slow' }, (res) => {
          res.once('data', () => {
            req.destroy();
            done();
          });
        });
        req.on('error', () => {});
        req.end();
      });
      await until(() => seen.length === 2);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(seen).toEqual([
        { url: '/done', statusCode: 201, completed: true },
        { url: '/slow', statusCode: 200, completed: false },
      ]);
      // Charged 5 each, settled to 1 and 0.
      expect((await limiter.peek({ identity: 'tenant' })).remaining).toBe(9);
    } finally {
      await app.close();
    }
  });
});
