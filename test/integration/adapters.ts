/**
 * Every adapter behind one small interface, so one scenario table drives them all over real
 * HTTP: each harness builds an app with a limited route `GET /items/:id` (plus `GET /other`)
 * from framework-neutral options, serves it on 127.0.0.1 and echoes `req.rateLimit`.
 */
import 'reflect-metadata';
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve as serveHono } from '@hono/node-server';
import { getConnInfo } from '@hono/node-server/conninfo';
import Router from '@koa/router';
import {
  type ArgumentsHost,
  Catch,
  Controller,
  type ExceptionFilter,
  Get,
  HttpException,
  type INestApplication,
  type LoggerService,
  Module,
  Req,
  UseGuards,
} from '@nestjs/common';
import { APP_FILTER, APP_GUARD, HttpAdapterHost, NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import type {
  Decision,
  DenyListInput,
  FailMode,
  HeaderFormat,
  IdentityInput,
  Limiter,
  PolicyInput,
  ResponseFacts,
  Store,
} from '@sluice/core';
import { rateLimit as expressRateLimit } from '@sluice/express';
import { type FastifyRateLimitOptions, rateLimit as fastifyRateLimit } from '@sluice/fastify';
import { type HonoRateLimitOptions, rateLimit as honoRateLimit, type RateLimitEnv } from '@sluice/hono';
import { rateLimit as koaRateLimit } from '@sluice/koa';
import {
  RateLimitException,
  RateLimitGuard,
  RateLimitModule,
  type RateLimitModuleOptions,
  type RateLimitRequest,
} from '@sluice/nestjs';
import express5 from 'express';
import express4 from 'express4';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import { type Context, Hono } from 'hono';
import Koa3 from 'koa';
import Koa2 from 'koa2';

/** What a scenario's functions see of a request, whatever the framework. */
export interface NeutralRequest {
  header(name: string): string | undefined;
}

/** Framework-neutral rate-limit options; harnesses translate the functions. */
export interface NeutralOptions {
  limiter?: Limiter;
  /** Policies, or a function of the request choosing them (names of `limiter`'s, or inputs). */
  policies?:
    | readonly (PolicyInput | string)[]
    | ((
        req: NeutralRequest,
      ) => readonly (PolicyInput | string)[] | Promise<readonly (PolicyInput | string)[]>);
  /** The shorthand's limit, or a function of the request choosing it. */
  limit?: number | ((req: NeutralRequest) => number | Promise<number>);
  window?: string | number;
  store?: Store;
  identity?: (req: NeutralRequest) => IdentityInput | undefined;
  cost?: number | Record<string, number> | ((req: NeutralRequest) => number | Record<string, number>);
  skip?: (req: NeutralRequest) => boolean;
  headers?: HeaderFormat;
  shadow?: boolean;
  /** Fail mode of the policies built here that name none. */
  failMode?: FailMode;
  /** Client IPs never limited. */
  allowList?: readonly string[];
  /** Client IPs and identities answered 403. */
  denyList?: DenyListInput;
  /** The units a request used, settled after its response (`settle`). */
  settle?: (req: NeutralRequest, response: ResponseFacts) => number | Record<string, number>;
  skipFailedRequests?: boolean;
  skipSuccessfulRequests?: boolean;
  /**
   * Replace the limited response with 418 `{"custom":true,"status":<verdict status>,"policy":<the
   * decision's policy>}`.
   */
  teapot?: boolean;
}

/**
 * Where the middleware sits: on the routes, app-wide before routing, or both (the same
 * middleware instance twice on one request).
 */
export type Mount = 'route' | 'app' | 'both';

/** A served test app. */
export interface Served {
  readonly url: string;
  close(): Promise<void>;
  /** Warnings the framework logged while serving (Nest's logger), for the tests to expect none. */
  readonly warnings?: readonly string[];
}

/** One adapter under test. */
export interface Harness {
  readonly name: string;
  /**
   * The exact `Content-Type` of core's problem+json answers: Nest's platforms serialize the
   * body themselves and add the charset parameter.
   */
  readonly problemContentType: string;
  /**
   * True when the adapter knows the matched route pattern when mounted app-wide (Hono, Nest):
   * `/items/abc` and `/items/def` are then one route and `/other` another; Express and Koa see
   * only the path there, so every request is the one unmatched route.
   */
  readonly patternAppWide: boolean;
  serve(options: NeutralOptions, mount: Mount): Promise<Served>;
  /**
   * Builds the adapter from raw options (for construction errors): calls `rateLimit`, or for
   * Nest starts an application with `RateLimitModule.forRoot(options)` and closes it again.
   */
  construct(options: Record<string, unknown>): unknown;
}

/** The status the test handlers answer with: the request's `x-status` header, else 200. */
function statusOf(header: string | undefined): number {
  return header === undefined ? 200 : Number(header);
}

/** Test handlers that held, by the `x-hold-tag` they were sent with: started, running, most at once. */
export interface HeldHandlers {
  started: number;
  running: number;
  peak: number;
}

const heldByTag = new Map<string, HeldHandlers>();

/** The count of the held handlers of requests sent with `x-hold-tag: <tag>`. */
export function heldHandlers(tag: string): HeldHandlers {
  let held = heldByTag.get(tag);
  if (held === undefined) {
    held = { started: 0, running: 0, peak: 0 };
    heldByTag.set(tag, held);
  }
  return held;
}

/**
 * What the test handlers wait before answering: the request's `x-hold-ms` header in ms (a
 * request that holds a concurrency slot that long), else nothing. Counted in `heldHandlers(tag)`
 * when the request has an `x-hold-tag` header.
 */
function holdFor(header: string | undefined, tag?: string): Promise<void> | undefined {
  if (header === undefined) return undefined;
  const held = tag === undefined ? { started: 0, running: 0, peak: 0 } : heldHandlers(tag);
  held.started++;
  held.peak = Math.max(held.peak, ++held.running);
  return new Promise((done) =>
    setTimeout(() => {
      held.running--;
      done();
    }, Number(header)),
  );
}

/** What the test handlers echo of the decision. */
export function summary(decision: Decision | undefined) {
  if (decision === undefined) return null;
  const { allowed, outcome, policy, remaining, shadowed } = decision;
  return { allowed, outcome, policy, remaining, shadowed };
}

async function listen(handler: RequestListener): Promise<Served> {
  const server: Server = createServer(handler);
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
}

function neutralFunctions<Req>(
  options: NeutralOptions,
  header: (req: Req, name: string) => string | undefined,
) {
  const wrap = (req: Req): NeutralRequest => ({ header: (name) => header(req, name) });
  const { identity, cost, skip, settle, teapot: _teapot, policies, limit, ...rest } = options;
  return {
    ...rest,
    ...(policies !== undefined
      ? { policies: typeof policies === 'function' ? (req: Req) => policies(wrap(req)) : policies }
      : {}),
    ...(limit !== undefined
      ? { limit: typeof limit === 'function' ? (req: Req) => limit(wrap(req)) : limit }
      : {}),
    ...(settle ? { settle: (req: Req, response: ResponseFacts) => settle(wrap(req), response) } : {}),
    ...(identity ? { identity: (req: Req) => identity(wrap(req)) } : {}),
    ...(skip ? { skip: (req: Req) => skip(wrap(req)) } : {}),
    ...(cost !== undefined
      ? { cost: typeof cost === 'function' ? (req: Req) => cost(wrap(req)) : cost }
      : {}),
  };
}

function expressHarness(name: string, express: typeof express5): Harness {
  return {
    name,
    problemContentType: 'application/problem+json',
    patternAppWide: false,
    construct: (options) => expressRateLimit(options as never),
    async serve(options, mount) {
      const limit = expressRateLimit({
        ...neutralFunctions<express5.Request>(options, (req, header) => req.get(header)),
        ...(options.teapot
          ? {
              onLimited: (req, res, _next, verdict) => {
                res.status(418).json({ custom: true, status: verdict.status, policy: req.rateLimit?.policy });
              },
            }
          : {}),
      });
      const app = express();
      if (mount !== 'route') app.use(limit);
      const routeLimit = mount === 'app' ? [] : [limit];
      const echo = async (req: express5.Request, res: express5.Response) => {
        await holdFor(req.get('x-hold-ms'), req.get('x-hold-tag'));
        res.status(statusOf(req.get('x-status'))).json({ ok: true, rateLimit: summary(req.rateLimit) });
      };
      app.get('/items/:id', ...routeLimit, echo);
      app.get('/other', ...routeLimit, echo);
      return listen(app as unknown as RequestListener);
    },
  };
}

function koaHarness(name: string, Koa: typeof Koa3): Harness {
  return {
    name,
    problemContentType: 'application/problem+json',
    patternAppWide: false,
    construct: (options) => koaRateLimit(options as never),
    async serve(options, mount) {
      const limit = koaRateLimit({
        ...neutralFunctions<Koa3.Context>(options, (ctx, header) => ctx.get(header) || undefined),
        ...(options.teapot
          ? {
              onLimited: (ctx, _next, verdict) => {
                ctx.status = 418;
                const decision = ctx.state.rateLimit as Decision | undefined;
                ctx.body = { custom: true, status: verdict.status, policy: decision?.policy };
              },
            }
          : {}),
      });
      const app = new Koa();
      if (mount !== 'route') app.use(limit);
      const router = new Router();
      const routeLimit = mount === 'app' ? [] : [limit];
      const echo = async (ctx: Koa3.Context) => {
        await holdFor(ctx.get('x-hold-ms') || undefined, ctx.get('x-hold-tag') || undefined);
        ctx.status = statusOf(ctx.get('x-status') || undefined);
        ctx.body = { ok: true, rateLimit: summary(ctx.state.rateLimit as Decision | undefined) };
      };
      router.get('/items/:id', ...routeLimit, echo);
      router.get('/other', ...routeLimit, echo);
      app.use(router.routes());
      return listen(app.callback());
    },
  };
}

const honoClientIp = (c: Context) => getConnInfo(c).remote.address;

function honoHarness(): Harness {
  return {
    name: 'hono',
    problemContentType: 'application/problem+json',
    patternAppWide: true,
    construct: (options) => honoRateLimit({ clientIp: honoClientIp, ...options } as never),
    async serve(options, mount) {
      const limit = honoRateLimit<RateLimitEnv>({
        clientIp: honoClientIp,
        ...(neutralFunctions<Context<RateLimitEnv>>(options, (c, header) =>
          c.req.header(header),
        ) as HonoRateLimitOptions<RateLimitEnv>),
        ...(options.teapot
          ? {
              onLimited: (c, verdict) =>
                c.json({ custom: true, status: verdict.status, policy: c.get('rateLimit')?.policy }, 418),
            }
          : {}),
      });
      const app = new Hono<RateLimitEnv>();
      if (mount !== 'route') app.use('*', limit);
      const routeLimit = mount === 'app' ? [] : [limit];
      const echo = async (c: Context<RateLimitEnv>) => {
        await holdFor(c.req.header('x-hold-ms'), c.req.header('x-hold-tag'));
        return c.json(
          { ok: true, rateLimit: summary(c.get('rateLimit')) },
          statusOf(c.req.header('x-status')) as 200,
        );
      };
      app.get('/items/:id', ...routeLimit, echo);
      app.get('/other', ...routeLimit, echo);
      return new Promise<Served>((done) => {
        const server = serveHono({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => {
          done({
            url: `http://127.0.0.1:${info.port}`,
            close: () =>
              new Promise<void>((closed) => {
                if ('closeAllConnections' in server) server.closeAllConnections();
                server.close(() => closed());
              }),
          });
        });
      });
    },
  };
}

/** Starts Fastify with the plugin's options, closing it again when registration or ready() fails. */
async function fastifyReady(options: FastifyRateLimitOptions, mount: Mount): Promise<FastifyInstance> {
  const app = Fastify();
  try {
    // 'route': a route group (the plugin inside a plugin); 'app': app-wide; 'both': the two.
    if (mount !== 'route') await app.register(fastifyRateLimit, options);
    await app.register(async (group) => {
      if (mount !== 'app') await group.register(fastifyRateLimit, options);
      const echo = async (request: FastifyRequest, reply: { code(status: number): unknown }) => {
        await holdFor(
          request.headers['x-hold-ms'] as string | undefined,
          request.headers['x-hold-tag'] as string | undefined,
        );
        reply.code(statusOf(request.headers['x-status'] as string | undefined));
        return { ok: true, rateLimit: summary(request.rateLimit ?? undefined) };
      };
      group.get('/items/:id', echo);
      group.get('/other', echo);
    });
    await app.ready();
    return app;
  } catch (error) {
    await app.close();
    throw error;
  }
}

function fastifyHarness(): Harness {
  return {
    name: 'fastify',
    problemContentType: 'application/problem+json; charset=utf-8',
    patternAppWide: true,
    construct: async (options) => (await fastifyReady(options as FastifyRateLimitOptions, 'app')).close(),
    async serve(options, mount) {
      const app = await fastifyReady(
        {
          ...(neutralFunctions<FastifyRequest>(options, (request, header) => {
            const value = request.headers[header];
            return typeof value === 'string' ? value : undefined;
          }) as FastifyRateLimitOptions),
          ...(options.teapot
            ? {
                onLimited: (request, reply, verdict) =>
                  reply
                    .code(418)
                    .send({ custom: true, status: verdict.status, policy: request.rateLimit?.policy }),
              }
            : {}),
        },
        mount,
      );
      await app.listen({ port: 0, host: '127.0.0.1' });
      const { port } = app.server.address() as AddressInfo;
      return { url: `http://127.0.0.1:${port}`, close: () => app.close() };
    },
  };
}

// Nest: controllers, filter and module are built by applying the decorators as functions,
// so this file needs no decorator transform. DI metadata of @sluice/nestjs comes from its build.

/** Applies a method decorator to `Class.prototype[method]`. */
function decorateMethod(Class: { prototype: object }, method: string, decorator: MethodDecorator): void {
  const descriptor = Object.getOwnPropertyDescriptor(Class.prototype, method);
  const result = decorator(Class.prototype, method, descriptor as PropertyDescriptor);
  if (result !== undefined) Object.defineProperty(Class.prototype, method, result);
}

const nestEcho = async (req: { rateLimit?: Decision; headers?: Record<string, unknown> }) => {
  await holdFor(
    req.headers?.['x-hold-ms'] as string | undefined,
    req.headers?.['x-hold-tag'] as string | undefined,
  );
  const body = { ok: true, rateLimit: summary(req.rateLimit) };
  const status = statusOf(req.headers?.['x-status'] as string | undefined);
  if (status !== 200) throw new HttpException(body, status);
  return body;
};

/** `GET /items/:id` and `GET /other`, with `@UseGuards(RateLimitGuard)` when `guarded`. */
function nestControllers(guarded: boolean): (new () => object)[] {
  class ItemsController {
    item(req: { rateLimit?: Decision }) {
      return nestEcho(req);
    }
  }
  class OtherController {
    other(req: { rateLimit?: Decision }) {
      return nestEcho(req);
    }
  }
  decorateMethod(ItemsController, 'item', Get(':id'));
  Req()(ItemsController.prototype, 'item', 0);
  Controller('items')(ItemsController);
  decorateMethod(OtherController, 'other', Get('other'));
  Req()(OtherController.prototype, 'other', 0);
  Controller()(OtherController);
  if (guarded) {
    UseGuards(RateLimitGuard)(ItemsController);
    UseGuards(RateLimitGuard)(OtherController);
  }
  return [ItemsController, OtherController];
}

const NEST_GUARDED = nestControllers(true);
const NEST_UNGUARDED = nestControllers(false);

/** Replaces the limited response with 418, as an app's own exception filter would. */
class TeapotFilter implements ExceptionFilter {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(exception: RateLimitException, host: ArgumentsHost) {
    const response: unknown = host.switchToHttp().getResponse();
    // The guard set the verdict's headers (problem+json included) before throwing; a filter
    // that answers with another media type says so, as the package README shows.
    this.adapterHost.httpAdapter.setHeader(response, 'Content-Type', 'application/json');
    this.adapterHost.httpAdapter.reply(
      response,
      { custom: true, status: exception.getStatus(), policy: exception.decision.policy },
      418,
    );
  }
}
Catch(RateLimitException)(TeapotFilter);

/** Neutral options as module options: policy names select the module's `defaultPolicies`. */
function nestModuleOptions(options: NeutralOptions): RateLimitModuleOptions {
  const translated = neutralFunctions<RateLimitRequest>(options, (req, header) => {
    const value = req.headers[header];
    return typeof value === 'string' ? value : undefined;
  }) as RateLimitModuleOptions & { policies?: readonly (PolicyInput | string)[] };
  const { policies } = translated;
  if (typeof policies === 'function') {
    // Chosen per request: the module's defaultPolicies as a function.
    const { policies: choose, ...rest } = translated;
    return { ...rest, defaultPolicies: choose as never };
  }
  if (policies?.every((policy) => typeof policy === 'string')) {
    const { policies: _names, ...rest } = translated;
    return { ...rest, defaultPolicies: policies as string[] };
  }
  return translated as RateLimitModuleOptions;
}

/** A Nest logger that keeps the warnings (its platforms warn, for one, when they rewrite an error reply's content type). */
function recordingLogger(warnings: string[]): LoggerService {
  return {
    log() {},
    error() {},
    warn(message: unknown, context?: unknown) {
      warnings.push(`${String(context)}: ${String(message)}`);
    },
  };
}

async function startNest(
  platform: 'express' | 'fastify',
  options: RateLimitModuleOptions,
  mount: Mount,
  teapot: boolean,
  warnings?: string[],
): Promise<INestApplication> {
  class AppModule {}
  Module({
    imports: [RateLimitModule.forRoot(options)],
    controllers: mount === 'app' ? NEST_UNGUARDED : NEST_GUARDED,
    providers: [
      ...(mount === 'route' ? [] : [{ provide: APP_GUARD, useClass: RateLimitGuard }]),
      ...(teapot
        ? [
            {
              provide: APP_FILTER,
              useFactory: (adapterHost: HttpAdapterHost) => new TeapotFilter(adapterHost),
              inject: [HttpAdapterHost],
            },
          ]
        : []),
    ],
  })(AppModule);
  const adapter = platform === 'fastify' ? new FastifyAdapter() : new ExpressAdapter();
  const logger = warnings === undefined ? false : recordingLogger(warnings);
  const app = await NestFactory.create(AppModule, adapter, { logger, abortOnError: false });
  await app.init();
  return app;
}

function nestHarness(platform: 'express' | 'fastify'): Harness {
  return {
    name: `nestjs (${platform})`,
    problemContentType: 'application/problem+json; charset=utf-8',
    patternAppWide: true,
    async construct(options) {
      const app = await startNest(platform, nestModuleOptions(options as NeutralOptions), 'route', false);
      await app.close();
    },
    async serve(options, mount) {
      const warnings: string[] = [];
      const app = await startNest(
        platform,
        nestModuleOptions(options),
        mount,
        options.teapot === true,
        warnings,
      );
      await app.listen(0, '127.0.0.1');
      const { port } = app.getHttpServer().address() as AddressInfo;
      return { url: `http://127.0.0.1:${port}`, close: () => app.close(), warnings };
    },
  };
}

/** Every adapter and framework major under test. */
export const HARNESSES: readonly Harness[] = [
  expressHarness('express 5', express5),
  expressHarness('express 4', express4),
  koaHarness('koa 3', Koa3),
  koaHarness('koa 2', Koa2),
  nestHarness('express'),
  nestHarness('fastify'),
  honoHarness(),
  fastifyHarness(),
];
