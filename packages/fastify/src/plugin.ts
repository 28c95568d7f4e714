/** `rateLimit`: the Fastify plugin that asks Sluice core for a decision and applies it. */
import {
  ADAPTER_OPTION_NAMES,
  checkFrameworkOptions,
  checkOptionNames,
  createRateLimitHandler,
  type Decision,
  type HttpVerdict,
  type RateLimitHandler,
  type RateLimitOptions,
  type RequestLimitResult,
  settleOnResponseEnd,
} from '@sluice/core';
import type {
  FastifyInstance,
  FastifyPluginAsync,
  FastifyReply,
  FastifyRequest,
  HookHandlerDoneFunction,
  RouteOptions,
} from 'fastify';
import fp from 'fastify-plugin';
import { routeRateLimitOptions } from './route-options.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The Sluice decision for this request, set before the handler runs; `null` when not limited. */
    rateLimit: Decision | null;
  }
  interface FastifyContextConfig {
    /** This route's own options, merged over the plugin's; `false`: never limited. */
    rateLimit?: FastifyRouteRateLimitOptions | false;
  }
}

/**
 * Replaces the default 429/503 response. Called after the rate-limit headers are set and
 * `request.rateLimit` holds the decision; send the answer with `reply.send()`. A request whose
 * reply was not sent goes on to its handler.
 */
export type OnLimited = (request: FastifyRequest, reply: FastifyReply, verdict: HttpVerdict) => unknown;

/** A route's own options (`config: { rateLimit: {...} }`): core's shared options plus `onLimited`. */
export interface FastifyRouteRateLimitOptions extends RateLimitOptions<FastifyRequest> {
  /** Replace the default problem+json response for denied (429) and unavailable (503) requests. */
  onLimited?: OnLimited;
}

/** Options of the plugin: a route's options plus `hook` and `global`. */
export interface FastifyRateLimitOptions extends FastifyRouteRateLimitOptions {
  /** The hook that limits: `'onRequest'` (default) or `'preHandler'`, after authentication hooks. */
  hook?: 'onRequest' | 'preHandler';
  /** Limit every route of the scope (default); `false`: only routes with `config.rateLimit`. */
  global?: boolean;
}

/** Every option name the plugin takes: core's, `onLimited`, `hook` and `global`. */
export const FASTIFY_OPTION_NAMES: readonly string[] = Object.freeze([
  ...ADAPTER_OPTION_NAMES,
  'onLimited',
  'hook',
  'global',
]);

/** The option names a route's `config.rateLimit` takes. */
const ROUTE_OPTION_NAMES: readonly string[] = Object.freeze([...ADAPTER_OPTION_NAMES, 'onLimited']);

/** One set of limits: core's handler and the response for denials. */
interface Limits {
  readonly core: RateLimitHandler<FastifyRequest>;
  readonly onLimited: OnLimited | undefined;
}

/** Which plugin registration applies a route's own options: the innermost that covers it. */
const routeOwners = new WeakMap<object, object>();

function limitsOf(options: FastifyRouteRateLimitOptions, optionNames: readonly string[]): Limits {
  const { onLimited, ...shared } = options;
  const core = createRateLimitHandler<FastifyRequest>(shared, 'fastify', { optionNames });
  return { core, onLimited };
}

async function plugin(fastify: FastifyInstance, options: FastifyRateLimitOptions): Promise<void> {
  const own = checkFrameworkOptions(options, 'fastify');
  checkOptionNames(options as Record<string, unknown>, FASTIFY_OPTION_NAMES, 'fastify rateLimit');
  const { hook: _hook, global: _global, ...routeDefaults } = options;
  const global = own.global as boolean;
  const scope = global ? limitsOf(routeDefaults, FASTIFY_OPTION_NAMES) : undefined;
  const registration = {};
  const seen: FastifyRouteRateLimitOptions[] = [];
  const routeLimits = new Map<object, Limits>();
  const buildRoute = (config: FastifyRouteRateLimitOptions): Limits => {
    const limits = limitsOf(routeRateLimitOptions(routeDefaults, config), ROUTE_OPTION_NAMES);
    routeLimits.set(config, limits);
    return limits;
  };

  const limitsFor = (request: FastifyRequest): Limits | undefined => {
    const config = request.routeOptions.config.rateLimit;
    if (config === undefined) return scope;
    if (config === false) return undefined;
    const owner = routeOwners.get(config);
    if (owner === registration) return routeLimits.get(config) as Limits;
    if (owner !== undefined) return scope;
    // A route declared before the plugin: its options are first seen here.
    routeOwners.set(config, registration);
    return buildRoute(config);
  };

  const limitHook = (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void => {
    let limits: Limits | undefined;
    try {
      limits = limitsFor(request);
    } catch (error) {
      return done(error as Error);
    }
    if (limits === undefined) return done();
    const facts = {
      method: request.method,
      pattern: request.routeOptions.url,
      path: request.url,
      ip: request.ip,
    };
    limits.core.limitRequest(request, facts).then(
      (result) => answer(limits, result, request, reply, done),
      (error: Error) => done(error),
    );
  };

  if (!fastify.hasRequestDecorator('rateLimit')) fastify.decorateRequest('rateLimit', null);
  // An instance hook: Fastify gives it to every route of this scope, those declared before too.
  fastify.addHook(own.hook as 'onRequest', limitHook);
  // The innermost registration that sees a route owns its options (inner hooks run last).
  fastify.addHook('onRoute', (route: RouteOptions) => {
    const config = route.config?.rateLimit;
    if (config === undefined || config === false) return;
    routeOwners.set(config, registration);
    seen.push(config);
  });
  // Built once every plugin is loaded: a route's bad options fail ready().
  fastify.addHook('onReady', async function buildRouteLimits() {
    for (const config of seen) {
      if (routeOwners.get(config) === registration && !routeLimits.has(config)) buildRoute(config);
    }
  });
}

function answer(
  limits: Limits,
  result: RequestLimitResult | undefined,
  request: FastifyRequest,
  reply: FastifyReply,
  done: HookHandlerDoneFunction,
): void {
  if (result === undefined) return done();
  const { decision, verdict } = result;
  request.rateLimit = decision;
  if (verdict.action === 'pass') {
    reply.headers(verdict.headers);
    if (result.settle !== undefined) settleOnResponseEnd(reply.raw, result.settle);
    return done();
  }
  const { onLimited } = limits;
  if (onLimited === undefined) {
    reply.code(verdict.status).headers(verdict.headers).send(verdict.bodyText);
    return;
  }
  reply.headers(verdict.onLimitedHeaders);
  // A throw or a rejection from the app's handler goes to Fastify's error handling.
  new Promise((resolve) => resolve(onLimited(request, reply, verdict))).then(
    () => (reply.sent ? undefined : done()),
    (error: Error) => done(error),
  );
}

/**
 * The Sluice rate-limit plugin for Fastify 5: `await app.register(rateLimit, options)`.
 *
 * It limits every route of the scope it is registered in (routes declared before it too, and
 * the routes of plugins registered after it); register it inside a plugin to limit a route
 * group. A route's `config: { rateLimit: {...} }` is merged over these options, `false` leaves
 * the route alone. The route key is the route's pattern (`POST /transfers/:id`), the client IP
 * is `request.ip` (Fastify's `trustProxy` decides whether forwarded headers count), and the
 * decision is `request.rateLimit`. Options are validated at registration, a route's at
 * `ready()`: bad input fails the start.
 *
 * @example
 * await app.register(rateLimit, { limit: 100, window: '1m' });
 */
export const rateLimit: FastifyPluginAsync<FastifyRateLimitOptions> = fp(plugin, {
  fastify: '5.x',
  name: '@sluice/fastify',
});
