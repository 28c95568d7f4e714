/**
 * Starts the Koa example app: PORT (default 3000, 0 = any free port) on 127.0.0.1,
 * REDIS_URL / REDIS_CLUSTER_NODES for the store, SLUICE_PREFIX for the key prefix, and
 * SLUICE_TIMEOUT_MS for the store deadline (default: core's 100 ms), SLUICE_DENY_LIST for the
 * CIDRs and API keys answered 403.
 * Prints `listening on <port>` when ready.
 */
import type { AddressInfo } from 'node:net';
import { appEnv, warmUp } from '@sluice/example-kit';
import { createApp } from './app.js';

const { port, description, options } = appEnv(process.env);
const { app, limiter } = createApp(options);
await warmUp(limiter);
const server = app.listen(port, '127.0.0.1', () => {
  const bound = (server.address() as AddressInfo).port;
  console.log(`koa-example (${description} store) listening on ${bound}`);
});
const stop = () => {
  server.close(() => process.exit(0));
  setTimeout(() => process.exit(0), 1000).unref();
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
