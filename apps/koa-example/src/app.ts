/** The example-app contract on Koa: routes, policies and /metrics. */
import Router from '@koa/router';
import type { Identity, Limiter } from '@sluice/core';
import {
  API_KEY_HEADER,
  apiKeyIdentity,
  concurrentReply,
  type ExampleAppOptions,
  exampleLimiter,
  generateReply,
  generateUnits,
  loginReply,
  ROUTE_LIMITS,
  tieredPolicies,
} from '@sluice/example-kit';
import { rateLimit } from '@sluice/koa';
import Koa, { type Context } from 'koa';

/** Options of `createApp`. */
export type { ExampleAppOptions };

/** The app and the limiter behind it. */
export interface ExampleApp {
  readonly app: Koa;
  readonly limiter: Limiter;
}

/**
 * Identity: the API key (kind `key`) when the client sends one, a stand-in for a tenant that
 * something in front of the app has authenticated; else core's client IP (kind `ip`).
 */
function identity(ctx: Context): Identity | undefined {
  return apiKeyIdentity(ctx.get(API_KEY_HEADER));
}

/** Builds the Koa app of the example-app contract. */
export function createApp(options: ExampleAppOptions = {}): ExampleApp {
  const { limiter, metrics, denyList } = exampleLimiter(options);
  const limit = (route: { policies: readonly string[]; cost?: Readonly<Record<string, number>> }) =>
    rateLimit({ limiter, identity, policies: route.policies, cost: route.cost, denyList });
  const ok = (ctx: Context) => {
    ctx.body = { ok: true };
  };

  const router = new Router();
  router.get('/health', ok);
  router.get('/limited', limit(ROUTE_LIMITS.limited), ok);
  router.post('/transfers/:id', limit(ROUTE_LIMITS.transfer), ok);
  router.get('/transfers/:id/status', limit(ROUTE_LIMITS.transferStatus), ok);
  router.get('/shadow', limit(ROUTE_LIMITS.shadow), ok);
  router.get('/strict', limit(ROUTE_LIMITS.strict), ok);
  router.get('/lenient', limit(ROUTE_LIMITS.lenient), ok);
  router.get('/leased', limit(ROUTE_LIMITS.leased), ok);
  // The plan's policies, chosen per request.
  const tiered = rateLimit({
    limiter,
    identity,
    denyList,
    policies: (ctx) => tieredPolicies(ctx.get(API_KEY_HEADER)),
  });
  router.get('/tiered', tiered, ok);
  const query = (ctx: Context, name: string) => {
    const value = ctx.query[name];
    return typeof value === 'string' ? value : undefined;
  };
  router.get('/queued', limit(ROUTE_LIMITS.queued), ok);
  router.get('/concurrent', limit(ROUTE_LIMITS.concurrent), async (ctx) => {
    const reply = await concurrentReply(query(ctx, 'ms'));
    ctx.status = reply.status;
    ctx.body = reply.body;
  });
  const { generate, login } = ROUTE_LIMITS;
  router.post(
    '/generate',
    rateLimit({
      limiter,
      identity,
      denyList,
      ...generate,
      settle: (ctx) => generateUnits(query(ctx, 'used'), generate.cost['llm-tokens']),
    }),
    (ctx) => {
      const reply = generateReply(query(ctx, 'used'));
      ctx.status = reply.status;
      ctx.body = reply.body;
    },
  );
  router.post(
    '/login',
    rateLimit({ limiter, identity, denyList, ...login, skipSuccessfulRequests: true }),
    (ctx) => {
      const reply = loginReply(query(ctx, 'ok'));
      ctx.status = reply.status;
      ctx.body = reply.body;
    },
  );
  router.get('/metrics', (ctx) => {
    ctx.set('Content-Type', metrics.contentType);
    ctx.body = metrics.render();
  });

  const app = new Koa();
  app.use(router.routes()).use(router.allowedMethods());
  return { app, limiter };
}
