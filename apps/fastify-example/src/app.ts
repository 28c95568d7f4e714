/** The example-app contract on Fastify: routes, policies and /metrics. */
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
import { type FastifyRouteRateLimitOptions, rateLimit } from '@sluice/fastify';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';

/** Options of `createApp`. */
export type { ExampleAppOptions };

/** The app (registered, not yet ready) and the limiter behind it. */
export interface ExampleApp {
  readonly app: FastifyInstance;
  readonly limiter: Limiter;
}

/** The value of a request header, when sent once. */
function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return typeof value === 'string' ? value : undefined;
}

/** The value of a query parameter, when sent once. */
function query(request: FastifyRequest, name: string): string | undefined {
  const value = (request.query as Record<string, unknown>)[name];
  return typeof value === 'string' ? value : undefined;
}

/**
 * Identity: the API key (kind `key`) when the client sends one, a stand-in for a tenant that
 * something in front of the app has authenticated; else core's client IP (kind `ip`).
 */
function identity(request: FastifyRequest): Identity | undefined {
  return apiKeyIdentity(header(request, API_KEY_HEADER));
}

/** A route's rate limit: its own options over the plugin's (limiter, identity, deny list). */
const limited = (rateLimit: FastifyRouteRateLimitOptions) => ({ config: { rateLimit } });

/** Builds the Fastify app of the example-app contract. */
export async function createApp(options: ExampleAppOptions = {}): Promise<ExampleApp> {
  const { limiter, metrics, denyList } = exampleLimiter(options);

  const app = Fastify();
  // Only routes with their own `config.rateLimit` are limited (`global: false`).
  await app.register(rateLimit, { limiter, identity, denyList, global: false });
  const ok = async () => ({ ok: true });
  app.get('/health', ok);
  app.get('/limited', limited(ROUTE_LIMITS.limited), ok);
  app.post('/transfers/:id', limited(ROUTE_LIMITS.transfer), ok);
  app.get('/transfers/:id/status', limited(ROUTE_LIMITS.transferStatus), ok);
  app.get('/shadow', limited(ROUTE_LIMITS.shadow), ok);
  app.get('/strict', limited(ROUTE_LIMITS.strict), ok);
  app.get('/lenient', limited(ROUTE_LIMITS.lenient), ok);
  app.get('/leased', limited(ROUTE_LIMITS.leased), ok);
  // The plan's policies, chosen per request.
  app.get('/tiered', limited({ policies: (request) => tieredPolicies(header(request, API_KEY_HEADER)) }), ok);
  app.get('/queued', limited(ROUTE_LIMITS.queued), ok);
  app.get('/concurrent', limited(ROUTE_LIMITS.concurrent), async (request, reply) => {
    const answer = await concurrentReply(query(request, 'ms'));
    return reply.code(answer.status).send(answer.body);
  });
  const { generate, login } = ROUTE_LIMITS;
  const settleGenerate = (request: FastifyRequest) =>
    generateUnits(query(request, 'used'), generate.cost['llm-tokens']);
  app.post('/generate', limited({ ...generate, settle: settleGenerate }), async (request, reply) => {
    const answer = generateReply(query(request, 'used'));
    return reply.code(answer.status).send(answer.body);
  });
  app.post('/login', limited({ ...login, skipSuccessfulRequests: true }), async (request, reply) => {
    const answer = loginReply(query(request, 'ok'));
    return reply.code(answer.status).send(answer.body);
  });
  app.get('/metrics', async (_request, reply) => reply.type(metrics.contentType).send(metrics.render()));
  return { app, limiter };
}
