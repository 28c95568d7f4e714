/** Koa 3 + @koa/router: no limiter, an empty middleware, a fixed 429, Sluice (@sluice/koa), or koa-ratelimit (memory or redis driver). */
import Router from '@koa/router';
import Koa from 'koa';
import { API_KEY_HEADER, DENY_RESPONSE, quotaFor, sluicePolicy, sluicePrefix, WINDOW_MS } from './config.mjs';

export async function createServer({ variant, store, path, redis, sluiceStore, lease }) {
  const app = new Koa();
  const router = new Router();
  const handlers = [];
  if (variant === 'sluice') {
    const { rateLimit } = await import('@sluice/koa');
    handlers.push(
      rateLimit({
        policies: [sluicePolicy(path, lease)],
        store: sluiceStore,
        prefix: sluicePrefix('koa', store, path, lease),
        identity: (ctx) => ctx.get(API_KEY_HEADER) || undefined,
      }),
    );
  } else if (variant === 'noop') {
    // Reference: the cheapest middleware there is, to show what adding any middleware costs.
    handlers.push((_ctx, next) => next());
  } else if (variant === 'noop-async') {
    // Reference: an empty middleware that awaits one already-resolved promise, the least any
    // limiter that awaits its store pays.
    handlers.push(async (_ctx, next) => {
      await Promise.resolve();
      await next();
    });
  } else if (variant === 'fixed-429') {
    // Reference: answers every request with Sluice's deny-path 429, deciding nothing.
    handlers.push((ctx) => {
      for (const name in DENY_RESPONSE.headers) ctx.set(name, DENY_RESPONSE.headers[name]);
      ctx.status = DENY_RESPONSE.status;
      ctx.body = DENY_RESPONSE.body;
    });
  } else if (variant === 'usual') {
    const { default: ratelimit } = await import('koa-ratelimit');
    handlers.push(
      ratelimit({
        driver: store === 'redis' ? 'redis' : 'memory',
        db: store === 'redis' ? redis : new Map(),
        namespace: `koa-${path}`,
        duration: WINDOW_MS,
        max: quotaFor(path),
        id: (ctx) => ctx.get(API_KEY_HEADER) || ctx.ip,
      }),
    );
  }
  router.get('/limited', ...handlers, (ctx) => {
    ctx.body = { ok: true };
  });
  app.use(router.routes());
  return (port) =>
    new Promise((resolve) => {
      const server = app.listen(port, '127.0.0.1', () => resolve(server.address().port));
    });
}
