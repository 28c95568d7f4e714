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
import { denyListFromEnv, storeFromEnv, timeoutMsFromEnv, warmUp } from '@sluice/example-kit';
import { RATE_LIMITER } from '@sluice/nestjs';
import { AppModule } from './app.module.js';

const port = Number(process.env.PORT ?? 3000);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  throw new Error(`PORT must be an integer between 0 and 65535, got ${process.env.PORT}`);
}
const platform = process.env.NEST_PLATFORM ?? 'express';
if (platform !== 'express' && platform !== 'fastify') {
  throw new Error(`NEST_PLATFORM must be express or fastify, got ${platform}`);
}
const timeoutMs = timeoutMsFromEnv(process.env);
const { store, description } = storeFromEnv(process.env);
const denyList = denyListFromEnv(process.env);
const appModule = AppModule.register({
  store,
  prefix: process.env.SLUICE_PREFIX || undefined,
  timeoutMs,
  ...(denyList !== undefined && { denyList }),
});
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
