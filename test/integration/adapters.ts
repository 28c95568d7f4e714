/**
 * Every adapter behind one small interface, so one scenario table drives them all over real
 * HTTP: each harness builds an app with a limited route `GET /items/:id` (plus `GET /other`)
 * from framework-neutral options, serves it on 127.0.0.1 and echoes `req.rateLimit`.
 */
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Router from '@koa/router';
import type { Decision, HeaderFormat, Limiter, PolicyInput, Store } from '@sluice/core';
import { rateLimit as expressRateLimit } from '@sluice/express';
import { rateLimit as koaRateLimit } from '@sluice/koa';
import express5 from 'express';
import express4 from 'express4';
import Koa3 from 'koa';
import Koa2 from 'koa2';

/** What a scenario's functions see of a request, whatever the framework. */
export interface NeutralRequest {
  header(name: string): string | undefined;
}

/** Framework-neutral rate-limit options; harnesses translate the functions. */
export interface NeutralOptions {
  limiter?: Limiter;
  policies?: readonly (PolicyInput | string)[];
  limit?: number;
  window?: string | number;
  store?: Store;
  identity?: (req: NeutralRequest) => string | undefined;
  cost?: number | Record<string, number> | ((req: NeutralRequest) => number | Record<string, number>);
  skip?: (req: NeutralRequest) => boolean;
  headers?: HeaderFormat;
  shadow?: boolean;
  /** Replace the limited response with 418 `{"custom":true,"status":<verdict status>}`. */
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
}

/** One adapter under test. */
export interface Harness {
  readonly name: string;
  serve(options: NeutralOptions, mount: Mount): Promise<Served>;
  /** Calls the adapter's `rateLimit` with raw options (for construction errors). */
  construct(options: Record<string, unknown>): unknown;
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
  const { identity, cost, skip, teapot: _teapot, ...rest } = options;
  return {
    ...rest,
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
    construct: (options) => expressRateLimit(options as never),
    async serve(options, mount) {
      const limit = expressRateLimit({
        ...neutralFunctions<express5.Request>(options, (req, header) => req.get(header)),
        ...(options.teapot
          ? {
              onLimited: (_req, res, _next, verdict) => {
                res.status(418).json({ custom: true, status: verdict.status });
              },
            }
          : {}),
      });
      const app = express();
      if (mount !== 'route') app.use(limit);
      const routeLimit = mount === 'app' ? [] : [limit];
      const echo = (req: express5.Request, res: express5.Response) => {
        res.json({ ok: true, rateLimit: summary(req.rateLimit) });
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
    construct: (options) => koaRateLimit(options as never),
    async serve(options, mount) {
      const limit = koaRateLimit({
        ...neutralFunctions<Koa3.Context>(options, (ctx, header) => ctx.get(header) || undefined),
        ...(options.teapot
          ? {
              onLimited: (ctx, _next, verdict) => {
                ctx.status = 418;
                ctx.body = { custom: true, status: verdict.status };
              },
            }
          : {}),
      });
      const app = new Koa();
      if (mount !== 'route') app.use(limit);
      const router = new Router();
      const routeLimit = mount === 'app' ? [] : [limit];
      const echo = (ctx: Koa3.Context) => {
        ctx.body = { ok: true, rateLimit: summary(ctx.state.rateLimit as Decision | undefined) };
      };
      router.get('/items/:id', ...routeLimit, echo);
      router.get('/other', ...routeLimit, echo);
      app.use(router.routes());
      return listen(app.callback());
    },
  };
}

/** Every adapter and framework major under test. */
export const HARNESSES: readonly Harness[] = [
  expressHarness('express 5', express5),
  expressHarness('express 4', express4),
  koaHarness('koa 3', Koa3),
  koaHarness('koa 2', Koa2),
];
