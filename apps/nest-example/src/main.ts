/**
 * Starts the NestJS example app (Express platform): PORT (default 3000, 0 = any free port)
 * on 127.0.0.1, REDIS_URL / REDIS_CLUSTER_NODES for the store, SLUICE_PREFIX for the key
 * prefix. Prints `listening on <port>` when ready.
 */
import 'reflect-metadata';
import type { AddressInfo } from 'node:net';
import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module.js';
import { storeFromEnv } from './store.js';

const port = Number(process.env.PORT ?? 3000);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  throw new Error(`PORT must be an integer between 0 and 65535, got ${process.env.PORT}`);
}
const { store, description } = storeFromEnv(process.env);
const app = await NestFactory.create(
  AppModule.register({ store, prefix: process.env.SLUICE_PREFIX || undefined }),
  { logger: ['error', 'warn'] },
);
await app.listen(port, '127.0.0.1');
const bound = (app.getHttpServer().address() as AddressInfo).port;
console.log(`nest-example (${description} store) listening on ${bound}`);
const stop = () => {
  app.close().finally(() => process.exit(0));
  setTimeout(() => process.exit(0), 1000).unref();
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
