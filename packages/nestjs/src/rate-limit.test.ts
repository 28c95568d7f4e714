/**
 * What is Nest's own, over real HTTP on the Express and the Fastify platform, with the
 * memory store and an injected clock: decorators and their precedence, skip lists, DI tokens,
 * forRootAsync, other contexts and construction errors. The scenario table every adapter
 * shares (a global and a route guard on one request, exception filters, content types) is
 * test/integration/adapter-scenarios.test.ts.
 */
import 'reflect-metadata';
import type { AddressInfo } from 'node:net';
import {
  type ArgumentsHost,
  Catch,
  Controller,
  type ExceptionFilter,
  Get,
  Inject,
  Injectable,
  type LoggerService,
  Module,
  type ModuleMetadata,
  Post,
  Req,
} from '@nestjs/common';
import { APP_FILTER, APP_GUARD } from '@nestjs/core';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import {
  createLimiter,
  type Decision,
  type Limiter,
  MemoryStore,
  type PolicyInput,
  type Store,
} from '@sluice/core';
import { afterEach, describe, expect, it } from 'vitest';
import { EXPECTED, json, type Reply, request } from '../../../test/support/adapter-client.js';
import { storeDown } from '../../core/src/limiter/test-stores.test-support.js';
import {
  RATE_LIMIT_STORE,
  RATE_LIMITER,
  RateLimit,
  RateLimitException,
  RateLimitGuard,
  RateLimitModule,
  type RateLimitModuleOptions,
  RateLimitService,
  SkipRateLimit,
} from './index.js';

/** A start time on a 10 s boundary, so fixed windows start with it. */
const T0 = 1_800_000_000_000;

interface World {
  now: number;
  advance(ms: number): void;
  clock(): number;
  limiter(policies: readonly PolicyInput[], store?: Store): Limiter;
}

function world(): World {
  const w: World = {
    now: T0,
    advance(ms) {
      w.now += ms;
    },
    clock: () => w.now,
    limiter(policies, store) {
      return createLimiter({ policies, store: store ?? new MemoryStore({ clock: w.clock }), clock: w.clock });
    },
  };
  return w;
}

function summary(decision: Decision | undefined) {
  if (decision === undefined) return null;
  const { allowed, outcome, policy, remaining, shadowed } = decision;
  return { allowed, outcome, policy, remaining, shadowed };
}

const echo = (req: { rateLimit?: Decision }) => ({ ok: true, rateLimit: summary(req.rateLimit) });

@Controller('items')
class ItemsController {
  @Get(':id')
  item(@Req() req: { rateLimit?: Decision }) {
    return echo(req);
  }
}

@Controller()
class OtherController {
  @Get('other')
  other(@Req() req: { rateLimit?: Decision }) {
    return echo(req);
  }
}

/** Replaces the limited response, as an app's own filter would. */
@Catch(RateLimitException)
class TeapotFilter implements ExceptionFilter {
  catch(exception: RateLimitException, host: ArgumentsHost) {
    const response = host.switchToHttp().getResponse<{
      status?: (code: number) => unknown;
      code?: (code: number) => unknown;
      header?: (name: string, value: string) => unknown;
      setHeader?: (name: string, value: string) => unknown;
      send: (body: string) => unknown;
    }>();
    const body = JSON.stringify({
      custom: true,
      status: exception.getStatus(),
      policy: exception.decision.policy,
    });
    if (typeof response.code === 'function') response.code(418);
    else response.status?.(418);
    if (response.setHeader) response.setHeader('Content-Type', 'application/json');
    else response.header?.('Content-Type', 'application/json');
    response.send(body);
  }
}

type Platform = 'express' | 'fastify';

interface Served {
  readonly url: string;
  close(): Promise<void>;
}

/**
 * Warnings Nest logged while serving (its platforms warn, for one, when they rewrite the
 * content type of an error reply); the served tests expect none.
 */
const warnings: string[] = [];
const recordingLogger: LoggerService = {
  log() {},
  error() {},
  warn(message: unknown, context?: unknown) {
    warnings.push(`${String(context)}: ${String(message)}`);
  },
};

async function serve(platform: Platform, metadata: ModuleMetadata): Promise<Served> {
  const moduleRef = await Test.createTestingModule(metadata).compile();
  const app =
    platform === 'fastify'
      ? moduleRef.createNestApplication(new FastifyAdapter(), { logger: recordingLogger })
      : moduleRef.createNestApplication({ logger: recordingLogger });
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close: () => app.close() };
}

interface Client {
  get(path: string, headers?: Record<string, string>): Promise<Reply>;
  post(path: string, headers?: Record<string, string>): Promise<Reply>;
}

const API_1_PER_10S: PolicyInput = { name: 'api', algorithm: 'fixed-window', limit: 1, window: '10s' };

// Decorated controllers for the Nest-specific tests.
const POLICIES: PolicyInput[] = [
  { name: 'a', algorithm: 'fixed-window', limit: 5, window: '10s' },
  { name: 'b', algorithm: 'fixed-window', limit: 2, window: '10s' },
];

@Controller('deco')
@RateLimit('a')
class DecoratedController {
  @Get('inherits')
  inherits() {
    return { ok: true };
  }

  @Get('override')
  @RateLimit('b')
  override() {
    return { ok: true };
  }

  @Get('both')
  @RateLimit('a', 'b')
  both() {
    return { ok: true };
  }

  @Get('skip-all')
  @SkipRateLimit()
  skipAll() {
    return { ok: true };
  }

  @Get('skip-b')
  @RateLimit('a', 'b')
  @SkipRateLimit('b')
  skipB() {
    return { ok: true };
  }

  @Post('own/:id')
  @RateLimit({ limit: 2, window: '10s' })
  own() {
    return { ok: true };
  }

  @Get('cost')
  @RateLimit({ policies: ['a'], cost: 5 })
  cost() {
    return { ok: true };
  }

  @Get('denied')
  @RateLimit({ policies: ['a'], denyList: ['127.0.0.0/8', '::1', '::ffff:127.0.0.1'] })
  denied() {
    return { ok: true };
  }

  @Get('plan')
  @RateLimit({ policies: async (req) => (req.headers['x-plan'] === 'b' ? ['b'] : ['a']) })
  plan() {
    return { ok: true };
  }

  @Get('own-plan')
  @RateLimit({ limit: (req) => (req.headers['x-plan'] === 'pro' ? 3 : 1), window: '10s' })
  ownPlan() {
    return { ok: true };
  }
}

@Controller('plain')
class PlainController {
  @Get()
  plain() {
    return { ok: true };
  }
}

@Controller('skipped')
@SkipRateLimit()
class SkippedController {
  @Get()
  skipped() {
    return { ok: true };
  }

  @Get('named')
  @SkipRateLimit('b')
  named() {
    return { ok: true };
  }
}

describe.each(['express', 'fastify'] as const)('NestJS on %s', (platform) => {
  let served: Served | undefined;
  afterEach(async () => {
    await served?.close();
    served = undefined;
    const logged = warnings.splice(0);
    expect(logged).toEqual([]);
  });

  async function start(metadata: ModuleMetadata): Promise<Client> {
    served = await serve(platform, metadata);
    const base = served.url;
    const send = (method: string) => (path: string, headers?: Record<string, string>) =>
      request(`${base}${path}`, { method, ...(headers === undefined ? {} : { headers }) });
    return { get: send('GET'), post: send('POST') };
  }

  // Nest answers through its exception layer, whose content-type handling differs between
  // majors (Nest 11's Express platform rewrote problem+json); the compat projects run this
  // file on Nest 10 and 11, so what every adapter answers is checked here on each major too.
  describe('answers through the exception layer', () => {
    const w = () => world();
    const app = (limiter: Limiter, teapot: boolean) =>
      start({
        imports: [RateLimitModule.forRoot({ limiter })],
        controllers: [ItemsController],
        providers: [
          { provide: APP_GUARD, useClass: RateLimitGuard },
          ...(teapot ? [{ provide: APP_FILTER, useClass: TeapotFilter }] : []),
        ],
      });

    it('429: problem+json with the exact headers and body, and no warning logged', async () => {
      const client = await app(w().limiter([API_1_PER_10S]), false);
      expect((await client.get('/items/1')).status).toBe(200);
      const denied = await client.get('/items/2');
      expect(denied.status).toBe(429);
      expect(denied.headers['content-type']).toBe('application/problem+json; charset=utf-8');
      expect(denied.headers['retry-after']).toBe('10');
      expect(denied.headers['cache-control']).toBe('no-store');
      expect(denied.headers.ratelimit).toBe('"api";r=0;t=10');
      expect(json(denied)).toEqual(EXPECTED.tooManyRequests(['api'], 'api', 10));
    });

    it('503: problem+json when the store fails under a closed policy', async () => {
      const failing = storeDown();
      const client = await app(w().limiter([{ name: 'api', limit: 5, window: '1s' }], failing), false);
      const reply = await client.get('/items/1');
      expect(reply.status).toBe(503);
      expect(reply.headers['content-type']).toBe('application/problem+json; charset=utf-8');
      expect(reply.headers['retry-after']).toBeUndefined();
      expect(json(reply)).toEqual(EXPECTED.unavailable());
      expect(reply.text).not.toContain('store down');
    });

    it("an app's exception filter replaces the body; the rate-limit headers stay", async () => {
      const client = await app(w().limiter([API_1_PER_10S]), true);
      expect((await client.get('/items/1')).status).toBe(200);
      const limited = await client.get('/items/1');
      expect(limited.status).toBe(418);
      expect(limited.headers['content-type']).toMatch(/^application\/json/);
      expect(json(limited)).toEqual({ custom: true, status: 429, policy: 'api' });
      expect(limited.headers['retry-after']).toBe('10');
      expect(limited.headers.ratelimit).toBe('"api";r=0;t=10');
    });
  });

  it('module policies on the module store, with an injected clock: one quota across routes', async () => {
    const w = world();
    const client = await start({
      imports: [
        RateLimitModule.forRoot({
          policies: [API_1_PER_10S],
          store: new MemoryStore({ clock: w.clock }),
          clock: w.clock,
        }),
      ],
      controllers: [ItemsController, OtherController],
      providers: [{ provide: APP_GUARD, useClass: RateLimitGuard }],
    });
    expect((await client.get('/items/1')).headers.ratelimit).toBe('"api";r=0;t=10');
    expect((await client.get('/other')).status).toBe(429);
    w.advance(10_000);
    expect((await client.get('/other')).status).toBe(200);
  });

  describe('decorators', () => {
    async function decorated(extra: Partial<RateLimitModuleOptions> = {}) {
      const w = world();
      const client = await start({
        imports: [RateLimitModule.forRoot({ policies: POLICIES, clock: w.clock, ...extra })],
        controllers: [DecoratedController, PlainController, SkippedController],
        providers: [{ provide: APP_GUARD, useClass: RateLimitGuard }],
      });
      return { client, w };
    }

    it("the handler's @RateLimit wins over the controller's", async () => {
      const { client } = await decorated();
      expect((await client.get('/deco/inherits')).headers['ratelimit-policy']).toBe('"a";q=5;w=10');
      expect((await client.get('/deco/override')).headers['ratelimit-policy']).toBe('"b";q=2;w=10');
      expect((await client.get('/deco/both')).headers['ratelimit-policy']).toBe('"a";q=5;w=10, "b";q=2;w=10');
    });

    it('several policies are decided together: a denial by one charges none', async () => {
      const { client } = await decorated();
      expect((await client.get('/deco/both')).headers.ratelimit).toBe('"a";r=4;t=10, "b";r=1;t=10');
      expect((await client.get('/deco/override')).headers.ratelimit).toBe('"b";r=0;t=10');
      const denied = await client.get('/deco/both');
      expect(denied.status).toBe(429);
      expect(json(denied)).toEqual(EXPECTED.tooManyRequests(['b'], 'b', 10));
      expect((await client.get('/deco/inherits')).headers.ratelimit).toBe('"a";r=3;t=10'); // 'a' not charged by the denial
    });

    it('@SkipRateLimit() skips every policy; @SkipRateLimit(name) only that one', async () => {
      const { client } = await decorated();
      for (let i = 0; i < 3; i++) {
        const skipped = await client.get('/deco/skip-all');
        expect(skipped.status).toBe(200);
        expect(skipped.headers.ratelimit).toBeUndefined();
      }
      const skipB = await client.get('/deco/skip-b');
      expect(skipB.headers['ratelimit-policy']).toBe('"a";q=5;w=10');
      expect((await client.get('/deco/override')).headers.ratelimit).toBe('"b";r=1;t=10'); // b untouched
    });

    it("the handler's @SkipRateLimit wins over the controller's", async () => {
      const { client } = await decorated();
      expect((await client.get('/skipped')).headers.ratelimit).toBeUndefined();
      expect((await client.get('/skipped/named')).headers['ratelimit-policy']).toBe('"a";q=5;w=10');
    });

    it('routes without @RateLimit get defaultPolicies (every module policy by default)', async () => {
      const all = await decorated();
      expect((await all.client.get('/plain')).headers['ratelimit-policy']).toBe('"a";q=5;w=10, "b";q=2;w=10');
      await served?.close();
      const none = await decorated({ defaultPolicies: [] });
      const plain = await none.client.get('/plain');
      expect(plain.status).toBe(200);
      expect(plain.headers.ratelimit).toBeUndefined();
      expect((await none.client.get('/deco/inherits')).headers.ratelimit).toBe('"a";r=4;t=10');
    });

    it('@RateLimit({ limit, window }) gives the route a policy of its own, keyed by route', async () => {
      const { client, w } = await decorated();
      const first = await client.post('/deco/own/1');
      expect(first.status).toBe(201);
      expect(first.headers['ratelimit-policy']).toBe('"DecoratedController.own";q=2;w=10');
      expect((await client.post('/deco/own/2')).headers.ratelimit).toBe('"DecoratedController.own";r=0;t=10');
      const denied = await client.post('/deco/own/3');
      expect(denied.status).toBe(429);
      expect((json(denied) as { policy: string }).policy).toBe('DecoratedController.own');
      expect((await client.get('/deco/inherits')).headers.ratelimit).toBe('"a";r=4;t=10');
      w.advance(10_000);
      expect((await client.post('/deco/own/1')).status).toBe(201);
    });

    it('RateLimitService.onDecision hears the module limiter and every route-own limiter', async () => {
      const w = world();
      let service: RateLimitService | undefined;
      @Controller('probe')
      class ProbeController {
        constructor(rateLimit: RateLimitService) {
          service = rateLimit;
        }
        @Get()
        get() {
          return { ok: true };
        }
      }
      const client = await start({
        imports: [RateLimitModule.forRoot({ policies: POLICIES, clock: w.clock })],
        controllers: [DecoratedController, ProbeController],
        providers: [{ provide: APP_GUARD, useClass: RateLimitGuard }],
      });
      const seen: string[] = [];
      const off = service?.onDecision((event) => seen.push(`${event.policy}:${event.outcome}`));
      await client.get('/deco/override');
      await client.post('/deco/own/1');
      expect(seen).toEqual(['b:allowed', 'DecoratedController.own:allowed']);
      off?.();
      await client.get('/deco/override');
      expect(seen).toHaveLength(2);
    });

    it("@RateLimit({ denyList }) answers 403 on that route only; the module's denyList on every other", async () => {
      const { client } = await decorated();
      const denied = await client.get('/deco/denied');
      expect(denied.status).toBe(403);
      expect(denied.headers['cache-control']).toBe('no-store');
      expect(json(denied)).toEqual({
        type: 'about:blank',
        title: 'Forbidden',
        status: 403,
        error: 'forbidden',
      });
      // Nothing of policy a was charged by the denied request.
      expect((await client.get('/deco/inherits')).headers.ratelimit).toBe('"a";r=4;t=10');
      await served?.close();
      served = undefined;
      const moduleWide = await decorated({
        denyList: { key: ['k'], ip: ['127.0.0.1', '::1', '::ffff:127.0.0.1'] },
      });
      expect((await moduleWide.client.get('/deco/inherits')).status).toBe(403);
      expect((await moduleWide.client.get('/plain')).status).toBe(403);
    });

    it('@RateLimit({ policies: (req) => names }) chooses the module policies per request', async () => {
      const { client } = await decorated();
      expect((await client.get('/deco/plan', { 'x-plan': 'b' })).headers['ratelimit-policy']).toBe(
        '"b";q=2;w=10',
      );
      expect((await client.get('/deco/plan')).headers['ratelimit-policy']).toBe('"a";q=5;w=10');
      expect((await client.get('/deco/plan', { 'x-plan': 'b' })).headers.ratelimit).toBe('"b";r=0;t=10');
      expect((await client.get('/deco/plan', { 'x-plan': 'b' })).status).toBe(429);
      // The other plan's policy was charged once only.
      expect((await client.get('/deco/plan')).headers.ratelimit).toBe('"a";r=3;t=10');
    });

    it('@RateLimit({ limit: (req) => n, window }): the route policy with a limit per request', async () => {
      const { client } = await decorated();
      const pro = { 'x-plan': 'pro' };
      for (let i = 0; i < 3; i++) {
        const reply = await client.get('/deco/own-plan', pro);
        expect(reply.status).toBe(200);
        expect(reply.headers['ratelimit-policy']).toBe('"DecoratedController.ownPlan";q=3;w=10');
      }
      const denied = await client.get('/deco/own-plan', pro);
      expect(denied.status).toBe(429);
      expect((json(denied) as { policy: string }).policy).toBe('DecoratedController.ownPlan');
      // The same client on the lower limit: its 3 units already exceed 1.
      expect((await client.get('/deco/own-plan')).status).toBe(429);
    });

    it('@RateLimit({ policies, cost }) charges that cost', async () => {
      const { client } = await decorated();
      expect((await client.get('/deco/cost')).headers.ratelimit).toBe('"a";r=0;t=10');
      expect((await client.get('/deco/cost')).status).toBe(429);
    });
  });

  it('forRootAsync: options from a factory with injected dependencies; DI tokens resolve', async () => {
    const w = world();
    const store = new MemoryStore({ clock: w.clock });

    @Injectable()
    class Settings {
      readonly limit = 2;
    }
    @Module({ providers: [Settings], exports: [Settings] })
    class SettingsModule {}

    @Controller('di')
    class DiController {
      constructor(
        @Inject(RATE_LIMITER) private readonly limiter: Limiter,
        @Inject(RATE_LIMIT_STORE) private readonly injectedStore: Store,
      ) {}
      @Get()
      get() {
        return {
          policies: this.limiter.policies.map((p) => p.name),
          sameStore: this.injectedStore === store,
        };
      }
    }

    const client = await start({
      imports: [
        RateLimitModule.forRootAsync({
          imports: [SettingsModule],
          inject: [Settings],
          useFactory: (settings: Settings) => ({
            policies: [{ name: 'async', algorithm: 'fixed-window', limit: settings.limit, window: '10s' }],
            store,
            clock: w.clock,
          }),
        }),
      ],
      controllers: [DiController],
      providers: [{ provide: APP_GUARD, useClass: RateLimitGuard }],
    });
    const reply = await client.get('/di');
    expect(json(reply)).toEqual({ policies: ['async'], sameStore: true });
    expect(reply.headers.ratelimit).toBe('"async";r=1;t=10');
  });
});

describe('RateLimitGuard in other contexts', () => {
  const limiter = () => world().limiter([API_1_PER_10S]);

  function rpcContext(data: { client: string }) {
    return {
      getType: () => 'rpc',
      getClass: () => OtherController,
      getHandler: () => OtherController.prototype.other,
      switchToRpc: () => ({ getData: () => data, getContext: () => ({}) }),
      switchToHttp: () => {
        throw new Error('not http');
      },
    } as never;
  }

  async function guards(extend: boolean, limiterOf: () => Limiter = limiter) {
    class RpcGuard extends RateLimitGuard {
      protected override getRequestFacts(context: Parameters<RateLimitGuard['canActivate']>[0]) {
        if (context.getType() !== 'rpc') return super.getRequestFacts(context);
        const data = context.switchToRpc().getData<{ client: string }>();
        return {
          request: data,
          method: 'RPC',
          pattern: 'orders.create',
          path: 'orders.create',
          ip: data.client,
        };
      }
    }
    const moduleRef = await Test.createTestingModule({
      imports: [RateLimitModule.forRoot({ limiter: limiterOf() })],
      providers: [RpcGuard],
    }).compile();
    return moduleRef.get(extend ? RpcGuard : RateLimitGuard);
  }

  it('lets non-HTTP contexts through by default', async () => {
    const guard = await guards(false);
    for (let i = 0; i < 3; i++)
      expect(await guard.canActivate(rpcContext({ client: '10.0.0.1' }))).toBe(true);
  });

  it('limits them when getRequestFacts is overridden, throwing RateLimitException', async () => {
    const guard = await guards(true);
    expect(await guard.canActivate(rpcContext({ client: '10.0.0.1' }))).toBe(true);
    const denied = guard.canActivate(rpcContext({ client: '10.0.0.1' }));
    await expect(denied).rejects.toBeInstanceOf(RateLimitException);
    await expect(denied).rejects.toMatchObject({ status: 429, decision: { policy: 'api', allowed: false } });
    expect(await guard.canActivate(rpcContext({ client: '10.0.0.2' }))).toBe(true);
  });

  it('refuses a concurrency policy there, naming it, holding no slot (it could never be released)', async () => {
    let inFlight: Limiter | undefined;
    const guard = await guards(true, () => {
      inFlight = createLimiter({
        policies: [{ name: 'in-flight', algorithm: 'concurrency', limit: 3 }],
        store: new MemoryStore(),
      });
      return inFlight;
    });
    for (let i = 0; i < 5; i++) {
      const refused = guard.canActivate(rpcContext({ client: '10.0.0.4' }));
      await expect(refused).rejects.toThrow(TypeError);
      await expect(refused).rejects.toThrow(
        `concurrency policy "in-flight" on OtherController.other cannot limit a 'rpc' context`,
      );
    }
    // Every slot taken was freed at once: all 3 are free.
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect((await inFlight!.peek({ identity: { kind: 'ip', value: '10.0.0.4' } })).remaining).toBe(3);
  });

  it('throws the exception without a stack trace, otherwise as constructed', async () => {
    const guard = await guards(true);
    await guard.canActivate(rpcContext({ client: '10.0.0.3' }));
    const thrown = await guard.canActivate(rpcContext({ client: '10.0.0.3' })).catch((e: unknown) => e);
    const built = new RateLimitException(
      (thrown as RateLimitException).verdict,
      (thrown as RateLimitException).decision,
    );
    expect(thrown).toBeInstanceOf(RateLimitException);
    expect((thrown as RateLimitException).message).toBe(built.message);
    expect(built.message).toBe('Rate Limit Exception');
    expect((thrown as RateLimitException).name).toBe('RateLimitException');
    expect((thrown as RateLimitException).getResponse()).toEqual(built.getResponse());
    expect((thrown as RateLimitException).stack).toBe('RateLimitException: Rate Limit Exception');
    expect(built.stack).toContain('\n    at ');
    // Error.stackTraceLimit is restored.
    expect(new Error('x').stack).toContain('\n    at ');
  });
});

describe('construction errors', () => {
  async function compile(options: RateLimitModuleOptions, controllers: ModuleMetadata['controllers'] = []) {
    const moduleRef = await Test.createTestingModule({
      imports: [RateLimitModule.forRoot(options)],
      controllers,
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    try {
      await app.init();
    } finally {
      await app.close();
    }
  }

  it('rejects a module without policies or limiter, and one with both', async () => {
    await expect(compile({})).rejects.toThrow(/"policies" must be a non-empty array/);
    await expect(
      compile({ policies: POLICIES, limiter: createLimiter({ policies: POLICIES }) }),
    ).rejects.toThrow(/"limiter" cannot be combined with "policies" \(or "limit" and "window"\)/);
    await expect(
      compile({ limit: 5, window: '1m', limiter: createLimiter({ policies: POLICIES }) }),
    ).rejects.toThrow(/"limiter" cannot be combined with "policies"/);
  });

  it('rejects a bad denyList at start-up, and in @RateLimit() when the class is defined', async () => {
    await expect(compile({ policies: POLICIES, denyList: ['nope'] }, [PlainController])).rejects.toThrow(
      /"denyList\.ip" is not an IPv4 or IPv6 address or CIDR range, got "nope"/,
    );
    expect(() => RateLimit({ policies: ['a'], denyList: { key: [''] } })(class Denied {})).toThrow(
      '@RateLimit(): "denyList.key" must be a non-empty string, got ""',
    );
  });

  it('validates the limit + window shorthand through core', async () => {
    await expect(compile({ limit: -1, window: '1m' })).rejects.toThrow(
      'rateLimit: "limit" must be a positive integer, got -1',
    );
    await expect(compile({ limit: 5, window: 'soon' })).rejects.toThrow(/"window".*soon/);
  });

  it('rejects unknown options and bad defaultPolicies', async () => {
    await expect(compile({ policies: POLICIES, polices: [] } as RateLimitModuleOptions)).rejects.toThrow(
      'RateLimitModule: "polices" is not an option of RateLimitModule.forRoot(): did you mean "policies"?',
    );
    await expect(compile({ max: 5, ttl: 60_000 } as RateLimitModuleOptions)).rejects.toThrow(
      'RateLimitModule: "max" is not an option of RateLimitModule.forRoot(): did you mean "limit"?',
    );
    await expect(
      compile({ throttlers: [{ ttl: 60_000, limit: 10 }] } as RateLimitModuleOptions),
    ).rejects.toThrow('"throttlers" is not an option of RateLimitModule.forRoot(): did you mean "policies"?');
    await expect(
      compile({ policies: POLICIES, store: { evalsha: () => 0, eval: () => 0 } as never }),
    ).rejects.toThrow(
      'RateLimitModule: "store" must be a Store, not a Redis client: wrap it in new RedisStore({ client })',
    );
    await expect(compile({ policies: POLICIES, defaultPolicies: 'a' as never })).rejects.toThrow(
      /"defaultPolicies" must be an array of policy names or a function, got "a"/,
    );
    await expect(
      compile({ policies: POLICIES, defaultPolicies: ['nope'] }, [PlainController]),
    ).rejects.toThrow(/nope/);
  });

  it('rejects a bad policy at start-up, naming the field', async () => {
    await expect(
      compile({ policies: [{ name: 'x', algorithm: 'fixed-window', limit: -1, window: '1s' }] }),
    ).rejects.toThrow(/limit/);
  });

  it('rejects an unknown policy name in @RateLimit() when the application starts', async () => {
    @Controller('typo')
    class TypoController {
      @Get()
      @RateLimit('paymnets')
      get() {
        return {};
      }
    }
    const payments = { name: 'payments', limit: 5, window: '1m' };
    await expect(compile({ policies: [...POLICIES, payments] }, [TypoController])).rejects.toThrow(
      /^@RateLimit\(\) on TypoController\.get: "policies" must name a policy of the limiter \(.*\): did you mean "payments"\?, got "paymnets"$/,
    );
  });

  it('rejects bad options to the decorators when the class is defined', () => {
    const decorate = (...args: unknown[]) => {
      class Target {
        handler() {}
      }
      const descriptor = Object.getOwnPropertyDescriptor(Target.prototype, 'handler');
      (RateLimit as (...a: unknown[]) => MethodDecorator)(...args)(
        Target.prototype,
        'handler',
        descriptor as never,
      );
    };
    expect(() => decorate()).toThrow(/give policy names or an options object/);
    expect(() => decorate({ policies: ['a'], limit: 3, window: '1s' })).toThrow(
      /"policies" cannot be combined with a policy of the route's own/,
    );
    expect(() => decorate({ limit: -1, window: '1s' })).toThrow(/limit/);
    expect(() => decorate({ limit: 1, window: '1s', colour: 'red' })).toThrow(
      '@RateLimit(): "colour" is not an option of @RateLimit()',
    );
    expect(() => decorate({ policies: [''] })).toThrow(/non-empty strings/);
    expect(() => SkipRateLimit('')).toThrow(/non-empty strings/);
  });
});
