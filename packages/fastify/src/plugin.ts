/** `rateLimit`: the Fastify plugin that asks Sluice core for a decision and applies it. */
import type { Decision, HttpVerdict, RateLimitOptions } from '@sluice/core';
import {
  ADAPTER_OPTION_NAMES,
  abortSignalOf,
  checkFrameworkOptions,
  checkOptionNames,
  createRateLimitHandler,
  type RateLimitHandler,
  type RequestLimitResult,
  settledAsGone,
  settleOnResponseEnd,
} from '@sluice/core/adapter';
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
import { HOOK_NAME, reportRoutesNotReached } from './unlimited-routes.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The Sluice decision for this request; `null` when not limited. */
    rateLimit: Decision | null;
  }
  interface FastifyContextConfig {
    /** This route's own options, merged over the plugin's; `false`: never limited. */
    rateLimit?: FastifyRouteRateLimitOptions | false;
  }
}

/**
 * Replaces the default 429/503 response, called with the rate-limit headers set: answer with
 * `reply.send()`; a request whose reply was not sent goes on to its handler.
 */
export type OnLimited = (request: FastifyRequest, reply: FastifyReply, verdict: HttpVerdict) => unknown;

/** A route's own options (`config: { rateLimit: {...} }`): core's shared options plus `onLimited`. */
export interface FastifyRouteRateLimitOptions extends RateLimitOptions<FastifyRequest> {
  /** Replace the default problem+json response for denied (429) and unavailable (503) requests. */
  onLimited?: OnLimited;
}

/** The plugin's options: a route's plus `hook` and `global`. */
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
const ROUTE_OPTION_NAMES: readonly string[] = FASTIFY_OPTION_NAMES.slice(0, -2);

interface Limits {
  readonly core: RateLimitHandler<FastifyRequest>;
  readonly onLimited: OnLimited | undefined;
}

/** The registration that applies a route's own options: the innermost that saw the route. */
const routeOwners = new WeakMap<object, object>();

function limitsOf(options: FastifyRouteRateLimitOptions, optionNames: readonly string[]): Limits {
  const { onLimited, ...shared } = options;
  return { core: createRateLimitHandler<FastifyRequest>(shared, 'fastify', { optionNames }), onLimited };
}

async function plugin(fastify: FastifyInstance, options: FastifyRateLimitOptions): Promise<void> {
  const own = checkFrameworkOptions(options, 'fastify');
  checkOptionNames(options as Record<string, unknown>, FASTIFY_OPTION_NAMES, 'fastify rateLimit');
  const { hook: _hook, global: _global, ...defaults } = options;
  const scope = own.global === true ? limitsOf(defaults, FASTIFY_OPTION_NAMES) : undefined;
  const registration = {}; // who owns a route's options (routeOwners)
  const routeLimits = new Map<FastifyRouteRateLimitOptions, Limits | undefined>();
  const build = (config: FastifyRouteRateLimitOptions): Limits => {
    const limits = limitsOf(routeRateLimitOptions(defaults, config), ROUTE_OPTION_NAMES);
    routeLimits.set(config, limits);
    return limits;
  };
  const limitsFor = (config: FastifyRouteRateLimitOptions | false | undefined): Limits | undefined => {
    if (config === undefined || config === false) return config === undefined ? scope : undefined;
    if ((routeOwners.get(config) ?? registration) !== registration) return scope;
    // Built at ready(), or now for a route declared before the plugin (no onRoute saw it).
    return routeLimits.get(config) ?? build(config);
  };

  const limitHook = (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void => {
    const route = request.routeOptions; // a getter that builds an object: read once
    let limits: Limits | undefined;
    try {
      limits = limitsFor(route.config.rateLimit);
    } catch (error) {
      return void done(error as Error);
    }
    if (limits === undefined) return void done();
    const { method, url: path, ip } = request;
    const facts = { method, pattern: route.url, path, ip, abortSignal: abortSignalOf(reply.raw) };
    limits.core
      .limitRequest(request, facts)
      .then((result) => answer(limits, result, request, reply, done), done);
  };

  Object.defineProperty(limitHook, 'name', { value: HOOK_NAME });
  if (!fastify.hasRequestDecorator('rateLimit')) fastify.decorateRequest('rateLimit', null);
  // An instance hook: Fastify gives it to every route of this scope and of its plugins, those
  // declared or loaded before it too.
  fastify.addHook(own.hook as 'onRequest', limitHook);
  // Each route gets its own copy (options objects may be shared by routes or apps); inner
  // registrations' onRoute hooks run last and take the route over from outer ones.
  fastify.addHook('onRoute', (route: RouteOptions) => {
    const config = route.config?.rateLimit;
    if (config === undefined || config === false) return;
    routeOwners.delete(config);
    const own = { ...config };
    route.config = { ...route.config, rateLimit: own };
    routeOwners.set(own, registration);
    routeLimits.set(own, undefined);
  });
  // Built once every plugin is loaded, so a route's bad options fail ready(); then the routes
  // this hook does not reach are reported.
  fastify.addHook('onReady', async function buildRouteLimits() {
    for (const config of routeLimits.keys()) if (routeOwners.get(config) === registration) build(config);
    reportRoutesNotReached(fastify, options.logger);
  });
}

function answer(
  limits: Limits,
  result: RequestLimitResult | undefined,
  request: FastifyRequest,
  reply: FastifyReply,
  done: HookHandlerDoneFunction,
): void {
  if (result === undefined) return void done();
  const { decision, verdict } = result;
  request.rateLimit = decision;
  if (verdict.action === 'pass') {
    reply.headers(verdict.headers);
    if (result.settle !== undefined) {
      // A client gone while its check was with the store: the handler does not run.
      if (settledAsGone(reply.raw, result.settle)) return void reply.hijack();
      settleOnResponseEnd(reply.raw, result.settle);
    }
    return void done();
  }
  const { onLimited } = limits;
  if (onLimited === undefined) {
    return void reply.code(verdict.status).headers(verdict.headers).send(verdict.bodyText);
  }
  reply.headers(verdict.onLimitedHeaders);
  // A throw or a rejection from the app's handler goes to Fastify's error handling.
  new Promise((resolve) => resolve(onLimited(request, reply, verdict))).then(
    () => (reply.sent ? undefined : done()),
    done,
  );
}

/**
 * The Sluice plugin for Fastify 5: `await app.register(rateLimit, options)`. It limits every
 * route of its scope and its plugins, those declared or loaded before it too; inside a plugin, a
 * route group, which names at startup the routes under its prefix it does not reach. A route's
 * `config.rateLimit` is merged over the options (`false`: not limited). The route key is the
 * route's pattern, the client IP `request.ip` (Fastify's `trustProxy`), the decision
 * `request.rateLimit`. Bad options fail `register()`, a route's `ready()`.
 * @example await app.register(rateLimit, { limit: 100, window: '1m' });
 */
export const rateLimit: FastifyPluginAsync<FastifyRateLimitOptions> = fp(plugin, {
  fastify: '5.x',
  name: '@sluice/fastify',
});
