/** Fastify 5: no limiter, an empty hook, a fixed 429, Sluice (@sluice/fastify), or @fastify/rate-limit (+ its Redis store). */
import Fastify from 'fastify';
import { API_KEY_HEADER, DENY_RESPONSE, quotaFor, sluicePolicy, sluicePrefix, WINDOW_MS } from './config.mjs';

export async function createServer({ variant, store, path, redis, sluiceStore, lease }) {
  const app = Fastify();
  if (variant === 'sluice') {
    const { rateLimit } = await import('@sluice/fastify');
    await app.register(rateLimit, {
      policies: [sluicePolicy(path, lease)],
      store: sluiceStore,
      prefix: sluicePrefix('fastify', store, path, lease),
      identity: (request) => request.headers[API_KEY_HEADER],
    });
  } else if (variant === 'noop') {
    // Reference: the cheapest hook there is, to show what adding any hook costs.
    app.addHook('onRequest', (_request, _reply, done) => done());
  } else if (variant === 'noop-async') {
    // Reference: an empty hook that awaits one already-resolved promise, the least any limiter
    // that awaits its store pays.
    app.addHook('onRequest', (_request, _reply, done) => {
      Promise.resolve().then(() => done());
    });
  } else if (variant === 'fixed-429') {
    // Reference: answers every request with Sluice's deny-path 429, deciding nothing.
    app.addHook('onRequest', (_request, reply, _done) => {
      reply.code(DENY_RESPONSE.status).headers(DENY_RESPONSE.headers).send(DENY_RESPONSE.body);
    });
  } else if (variant === 'usual') {
    const { default: rateLimit } = await import('@fastify/rate-limit');
    await app.register(rateLimit, {
      max: quotaFor(path),
      timeWindow: WINDOW_MS,
      enableDraftSpec: true,
      keyGenerator: (request) => request.headers[API_KEY_HEADER] ?? 'anonymous',
      ...(store === 'redis' ? { redis, nameSpace: `fst-${path}-` } : {}),
    });
  }
  app.get('/limited', async () => ({ ok: true }));
  return async (port) => {
    await app.listen({ port, host: '127.0.0.1' });
    return app.server.address().port;
  };
}
