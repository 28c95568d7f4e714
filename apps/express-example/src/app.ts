/** The example-app contract on Express: routes, policies and /metrics. */
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
import { rateLimit } from '@sluice/express';
import express, { type Express, type Request } from 'express';

/** Options of `createApp`. */
export type { ExampleAppOptions };

/** The app and the limiter behind it. */
export interface ExampleApp {
  readonly app: Express;
  readonly limiter: Limiter;
}

/**
 * Identity: the API key (kind `key`) when the client sends one, a stand-in for a tenant that
 * something in front of the app has authenticated; else core's client IP (kind `ip`).
 */
function identity(req: Request): Identity | undefined {
  return apiKeyIdentity(req.get(API_KEY_HEADER));
}

/** Builds the Express app of the example-app contract. */
export function createApp(options: ExampleAppOptions = {}): ExampleApp {
  const { limiter, metrics, denyList } = exampleLimiter(options);
  const limit = (route: { policies: readonly string[]; cost?: Readonly<Record<string, number>> }) =>
    rateLimit({ limiter, identity, policies: route.policies, cost: route.cost, denyList });

  const app = express();
  app.disable('x-powered-by');
  const ok = (_req: Request, res: express.Response) => {
    res.json({ ok: true });
  };
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
    identity,
    denyList,
    policies: (req) => tieredPolicies(req.get(API_KEY_HEADER)),
  });
  app.get('/tiered', tiered, ok);
  const query = (req: Request, name: string) =>
    typeof req.query[name] === 'string' ? req.query[name] : undefined;
  app.get('/queued', limit(ROUTE_LIMITS.queued), ok);
  app.get('/concurrent', limit(ROUTE_LIMITS.concurrent), async (req, res) => {
    const reply = await concurrentReply(query(req, 'ms'));
    res.status(reply.status).json(reply.body);
  });
  const { generate, login } = ROUTE_LIMITS;
  app.post(
    '/generate',
    rateLimit({
      limiter,
      identity,
      denyList,
      ...generate,
      settle: (req) => generateUnits(query(req, 'used'), generate.cost['llm-tokens']),
    }),
    (req, res) => {
      const reply = generateReply(query(req, 'used'));
      res.status(reply.status).json(reply.body);
    },
  );
  app.post(
    '/login',
    rateLimit({ limiter, identity, denyList, ...login, skipSuccessfulRequests: true }),
    (req, res) => {
      const reply = loginReply(query(req, 'ok'));
      res.status(reply.status).json(reply.body);
    },
  );
  app.get('/metrics', (_req, res) => {
    res.setHeader('Content-Type', metrics.contentType);
    res.end(metrics.render());
  });
  return { app, limiter };
}
