/** Express 5: no limiter, an empty middleware, a fixed 429, Sluice (@sluice/express), or express-rate-limit (+ rate-limit-redis). */
import express from 'express';
import { API_KEY_HEADER, DENY_RESPONSE, quotaFor, sluicePolicy, sluicePrefix, WINDOW_MS } from './config.mjs';

export async function createServer({ variant, store, path, redis, sluiceStore, lease }) {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  const handlers = [];
  if (variant === 'sluice') {
    const { rateLimit } = await import('@sluice/express');
    handlers.push(
      rateLimit({
        policies: [sluicePolicy(path, lease)],
        store: sluiceStore,
        prefix: sluicePrefix('express', store, path, lease),
        identity: (req) => req.get(API_KEY_HEADER),
      }),
    );
  } else if (variant === 'noop') {
    // Reference: the cheapest middleware there is, to show what adding any middleware costs.
    handlers.push((_req, _res, next) => next());
  } else if (variant === 'noop-async') {
    // Reference: an empty middleware that awaits one already-resolved promise, the least any
    // limiter that awaits its store pays.
    handlers.push((_req, _res, next) => {
      Promise.resolve().then(() => next());
    });
  } else if (variant === 'fixed-429') {
    // Reference: answers every request with Sluice's deny-path 429, deciding nothing.
    handlers.push((_req, res) => {
      res.statusCode = DENY_RESPONSE.status;
      for (const name in DENY_RESPONSE.headers) res.setHeader(name, DENY_RESPONSE.headers[name]);
      res.end(DENY_RESPONSE.body);
    });
  } else if (variant === 'usual') {
    const { rateLimit } = await import('express-rate-limit');
    let redisStore;
    if (store === 'redis') {
      const { RedisStore } = await import('rate-limit-redis');
      redisStore = new RedisStore({ sendCommand: (...args) => redis.call(...args), prefix: `erl-${path}:` });
    }
    handlers.push(
      rateLimit({
        windowMs: WINDOW_MS,
        limit: quotaFor(path),
        standardHeaders: 'draft-7',
        legacyHeaders: false,
        keyGenerator: (req) => req.get(API_KEY_HEADER) ?? 'anonymous',
        ...(redisStore ? { store: redisStore } : {}),
      }),
    );
  }
  app.get('/limited', ...handlers, (_req, res) => {
    res.json({ ok: true });
  });
  return (port) =>
    new Promise((resolve) => {
      const server = app.listen(port, '127.0.0.1', () => resolve(server.address().port));
    });
}
