/** The example-app contract on Hono: routes, policies and /metrics. */
import { getConnInfo } from '@hono/node-server/conninfo';
import { createDenyList, createLimiter, createMetrics, type Limiter } from '@sluice/core';
import {
  API_KEY_HEADER,
  concurrentReply,
  type ExampleAppOptions,
  generateReply,
  generateUnits,
  loginReply,
  POLICIES,
  ROUTE_LIMITS,
  tieredPolicies,
} from '@sluice/example-kit';
import { type RateLimitEnv, rateLimit } from '@sluice/hono';
import { type Context, Hono } from 'hono';

/** Options of `createApp`. */
export type { ExampleAppOptions };

/** The app and the limiter behind it. */
export interface ExampleApp {
  readonly app: Hono<RateLimitEnv>;
  readonly limiter: Limiter;
}

/** The client address of the socket (@hono/node-server; other runtimes have their own getConnInfo). */
function clientIp(c: Context): string | undefined {
  return getConnInfo(c).remote.address;
}

/** Builds the Hono app of the example-app contract. */
export function createApp(options: ExampleAppOptions = {}): ExampleApp {
  const limiter = createLimiter({
    policies: POLICIES,
    store: options.store,
    prefix: options.prefix,
    timeoutMs: options.timeoutMs,
  });
  const metrics = createMetrics();
  limiter.onDecision((event) => metrics.record(event));
  // One list for every route; `denyList.replace(...)` would change it for all of them at once.
  const denyList = createDenyList(options.denyList);
  const limit = (route: { policies: readonly string[]; cost?: Readonly<Record<string, number>> }) =>
    // Identity: the API key (kind `key`) when the client sends one, a stand-in for a tenant that
    // something in front of the app has authenticated; else the client IP (kind `ip`).
    rateLimit({
      limiter,
      identityHeader: API_KEY_HEADER,
      clientIp,
      policies: route.policies,
      cost: route.cost,
      denyList,
    });
  const ok = (c: Context) => c.json({ ok: true });

  const app = new Hono<RateLimitEnv>();
  app.get('/health', ok);
  app.get('/limited', limit(ROUTE_LIMITS.limited), ok);
  app.post('/transfers/:id', limit(ROUTE_LIMITS.transfer), ok);
  app.get('/transfers/:id/status', limit(ROUTE_LIMITS.transferStatus), ok);
  app.get('/shadow', limit(ROUTE_LIMITS.shadow), ok);
  app.get('/strict', limit(ROUTE_LIMITS.strict), ok);
  app.get('/lenient', limit(ROUTE_LIMITS.lenient), ok);
  app.get('/leased', limit(ROUTE_LIMITS.leased), ok);
  // The plan's policies, chosen per request.
  const tiered = rateLimit({
    limiter,
    identityHeader: API_KEY_HEADER,
    clientIp,
    denyList,
    policies: (c) => tieredPolicies(c.req.header(API_KEY_HEADER)),
  });
  app.get('/tiered', tiered, ok);
  app.get('/queued', limit(ROUTE_LIMITS.queued), ok);
  app.get('/concurrent', limit(ROUTE_LIMITS.concurrent), async (c) => {
    const reply = await concurrentReply(c.req.query('ms'));
    return c.json(reply.body, reply.status);
  });
  const { generate, login } = ROUTE_LIMITS;
  const own = { limiter, identityHeader: API_KEY_HEADER, clientIp, denyList };
  app.post(
    '/generate',
    rateLimit({
      ...own,
      ...generate,
      settle: (c) => generateUnits(c.req.query('used'), generate.cost['llm-tokens']),
    }),
    (c) => {
      const reply = generateReply(c.req.query('used'));
      return c.json(reply.body, reply.status);
    },
  );
  app.post('/login', rateLimit({ ...own, ...login, skipSuccessfulRequests: true }), (c) => {
    const reply = loginReply(c.req.query('ok'));
    return c.json(reply.body, reply.status);
  });
  app.get('/metrics', (c) => c.body(metrics.render(), 200, { 'Content-Type': metrics.contentType }));
  return { app, limiter };
}
