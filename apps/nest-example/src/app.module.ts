/** The example-app contract on NestJS: one global guard, policies named per route. */
import { type DynamicModule, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import type { Identity } from '@sluice/core';
import { API_KEY_HEADER, apiKeyIdentity, type ExampleAppOptions, POLICIES } from '@sluice/example-kit';
import { RateLimitGuard, RateLimitModule, type RateLimitRequest } from '@sluice/nestjs';
import { ExampleController } from './example.controller.js';
import { MetricsController } from './metrics.controller.js';

/** Options of `AppModule.register`. */
export type { ExampleAppOptions };

/**
 * Identity: the API key (kind `key`) when the client sends one, a stand-in for a tenant that
 * something in front of the app has authenticated; else core's client IP (kind `ip`).
 */
function identity(req: RateLimitRequest): Identity | undefined {
  return apiKeyIdentity(req.headers[API_KEY_HEADER]);
}

/** The root module of the example app. */
@Module({})
// biome-ignore lint/complexity/noStaticOnlyClass: a Nest module is a class
export class AppModule {
  /** Builds the app module for a store, a key prefix and a store deadline. */
  static register(options: ExampleAppOptions = {}): DynamicModule {
    return {
      module: AppModule,
      imports: [
        RateLimitModule.forRoot({
          policies: POLICIES,
          store: options.store,
          prefix: options.prefix,
          timeoutMs: options.timeoutMs,
          identity,
          ...(options.denyList !== undefined && { denyList: options.denyList }),
          defaultPolicies: [],
        }),
      ],
      controllers: [ExampleController, MetricsController],
      providers: [{ provide: APP_GUARD, useClass: RateLimitGuard }],
    };
  }
}
