/**
 * Starts the NestJS example app: PORT (default 3000, 0 = any free port) on 127.0.0.1,
 * REDIS_URL / REDIS_CLUSTER_NODES for the store, SLUICE_PREFIX for the key prefix,
 * SLUICE_TIMEOUT_MS for the store deadline (default: core's 100 ms), SLUICE_DENY_LIST for the CIDRs and
 * API keys answered 403, and NEST_PLATFORM (`express`, the default, or `fastify`). Prints `listening on <port>` when ready.
 */
import 'reflect-metadata';
import type { AddressInfo } from 'node:net';
import { NestFactory } from '@nestjs/core';
import type { Limiter } from '@sluice/core';
import { appEnv, warmUp } from '@sluice/example-kit';
import { RATE_LIMITER } from '@sluice/nestjs';
import { AppModule } from './app.module.js';

const { port, description, options } = appEnv(process.env);
const platform = process.env.NEST_PLATFORM ?? 'express';
if (platform !== 'express' && platform !== 'fastify') {
  throw new Error(`NEST_PLATFORM must be express or fastify, got ${platform}`);
}
const appModule = AppModule.register(options);
const logger = ['error', 'warn'] as const;
const app =
  platform === 'fastify'
    ? await NestFactory.create(appModule, new (await import('@nestjs/platform-fastify')).FastifyAdapter(), {
        logger: [...logger],
      })
    : await NestFactory.create(appModule, { logger: [...logger] });
await warmUp(app.get<Limiter>(RATE_LIMITER));
await app.listen(port, '127.0.0.1');
const bound = (app.getHttpServer().address() as AddressInfo).port;
console.log(`nest-example (${platform}, ${description} store) listening on ${bound}`);
const stop = () => {
  app.close().finally(() => process.exit(0));
  setTimeout(() => process.exit(0), 1000).unref();
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
