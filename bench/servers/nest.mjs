/**
 * NestJS 12 on platform-express: no limiter, an always-true guard, a guard throwing a fixed 429, Sluice (@sluice/nestjs RateLimitModule + RateLimitGuard
 * as APP_GUARD), or @nestjs/throttler (its memory storage, or a Redis storage). Decorators are
 * applied as plain function calls, so no build step is needed.
 */
import 'reflect-metadata';
import { Controller, Get, HttpException, Module } from '@nestjs/common';
import { APP_GUARD, NestFactory } from '@nestjs/core';
import { API_KEY_HEADER, DENY_RESPONSE, quotaFor, sluicePolicy, sluicePrefix, WINDOW_MS } from './config.mjs';

class BenchController {
  limited() {
    return { ok: true };
  }
}
Controller()(BenchController);
Get('limited')(
  BenchController.prototype,
  'limited',
  Object.getOwnPropertyDescriptor(BenchController.prototype, 'limited'),
);

export async function createServer({ variant, store, path, redis, sluiceStore, lease }) {
  const imports = [];
  const providers = [];
  if (variant === 'sluice') {
    const { RateLimitGuard, RateLimitModule } = await import('@sluice/nestjs');
    imports.push(
      RateLimitModule.forRoot({
        policies: [sluicePolicy(path, lease)],
        ...(sluiceStore ? { store: sluiceStore } : {}),
        prefix: sluicePrefix('nest', store, path, lease),
        identity: (req) => {
          const key = req.headers[API_KEY_HEADER];
          return typeof key === 'string' ? key : undefined;
        },
      }),
    );
    providers.push({ provide: APP_GUARD, useClass: RateLimitGuard });
  } else if (variant === 'noop') {
    // Reference: the cheapest guard there is, to show what adding any guard costs.
    class AllowGuard {
      canActivate() {
        return true;
      }
    }
    providers.push({ provide: APP_GUARD, useClass: AllowGuard });
  } else if (variant === 'noop-async') {
    // Reference: a guard that resolves to true, the least any guard that awaits its store pays.
    class AsyncAllowGuard {
      async canActivate() {
        return true;
      }
    }
    providers.push({ provide: APP_GUARD, useClass: AsyncAllowGuard });
  } else if (variant === 'fixed-429') {
    // Reference: a guard that sets Sluice's deny-path headers and throws its 429 through Nest's
    // exception layer (as a Nest guard denies), deciding nothing; no stack trace, as Sluice's.
    const body = JSON.parse(DENY_RESPONSE.body);
    class Fixed429Guard {
      canActivate(context) {
        const res = context.switchToHttp().getResponse();
        for (const name in DENY_RESPONSE.headers) res.setHeader(name, DENY_RESPONSE.headers[name]);
        const limit = Error.stackTraceLimit;
        Error.stackTraceLimit = 0;
        try {
          throw new HttpException(body, DENY_RESPONSE.status);
        } finally {
          Error.stackTraceLimit = limit;
        }
      }
    }
    providers.push({ provide: APP_GUARD, useClass: Fixed429Guard });
  } else if (variant === 'usual') {
    const { ThrottlerGuard, ThrottlerModule } = await import('@nestjs/throttler');
    let storage;
    if (store === 'redis') {
      const { RedisThrottlerStorage } = await import('../anchors/nest-throttler-redis-storage.mjs');
      storage = new RedisThrottlerStorage(redis, `throttler-${path}`);
    }
    imports.push(
      ThrottlerModule.forRoot({
        throttlers: [{ ttl: WINDOW_MS, limit: quotaFor(path) }],
        getTracker: (req) => req.headers[API_KEY_HEADER] ?? req.ip,
        ...(storage ? { storage } : {}),
      }),
    );
    providers.push({ provide: APP_GUARD, useClass: ThrottlerGuard });
  }
  class BenchModule {}
  Module({ imports, controllers: [BenchController], providers })(BenchModule);
  const app = await NestFactory.create(BenchModule, { logger: false });
  return async (port) => {
    await app.listen(port, '127.0.0.1');
    return app.getHttpServer().address().port;
  };
}
