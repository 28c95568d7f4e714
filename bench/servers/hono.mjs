/** Hono 4 on @hono/node-server: no limiter, an empty middleware, a fixed 429, Sluice (@sluice/hono), or hono-rate-limiter (memory or RedisStore). */
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { API_KEY_HEADER, DENY_RESPONSE, quotaFor, sluicePolicy, sluicePrefix, WINDOW_MS } from './config.mjs';

export async function createServer({ variant, store, path, redis, sluiceStore, lease }) {
  const app = new Hono();
  const handlers = [];
  if (variant === 'sluice') {
    const { rateLimit } = await import('@sluice/hono');
    handlers.push(
      rateLimit({
        policies: [sluicePolicy(path, lease)],
        store: sluiceStore,
        prefix: sluicePrefix('hono', store, path, lease),
        identity: (c) => c.req.header(API_KEY_HEADER),
      }),
    );
  } else if (variant === 'noop') {
    // Reference: the cheapest middleware there is, to show what adding any middleware costs.
    handlers.push((_c, next) => next());
  } else if (variant === 'noop-async') {
    // Reference: an empty middleware that awaits one already-resolved promise, the least any
    // limiter that awaits its store pays.
    handlers.push(async (_c, next) => {
      await Promise.resolve();
      await next();
    });
  } else if (variant === 'fixed-429') {
    // Reference: answers every request with Sluice's deny-path 429, deciding nothing.
    handlers.push(
      () =>
        new Response(DENY_RESPONSE.body, { status: DENY_RESPONSE.status, headers: DENY_RESPONSE.headers }),
    );
  } else if (variant === 'usual') {
    const { rateLimiter, RedisStore } = await import('hono-rate-limiter');
    let redisStore;
    if (store === 'redis') {
      const { honoRedisClient } = await import('../anchors/hono-ioredis-client.mjs');
      redisStore = new RedisStore({ client: honoRedisClient(redis), prefix: `hrl-${path}:` });
    }
    handlers.push(
      rateLimiter({
        windowMs: WINDOW_MS,
        limit: quotaFor(path),
        standardHeaders: 'draft-7',
        keyGenerator: (c) => c.req.header(API_KEY_HEADER) ?? 'anonymous',
        ...(redisStore ? { store: redisStore } : {}),
      }),
    );
  }
  app.get('/limited', ...handlers, (c) => c.json({ ok: true }));
  return (port) =>
    new Promise((resolve) => {
      const server = serve({ fetch: app.fetch, port, hostname: '127.0.0.1' }, (info) => resolve(info.port));
      void server;
    });
}
