/**
 * The drain as a gRPC client sees it, on a real redis-server held by `CLIENT PAUSE` so a call stays
 * in flight: a health Watch stream reports NOT_SERVING and stays open for the whole drain, then
 * ends once the calls in flight are answered.
 */
import { spawnSync } from 'node:child_process';
import {
  type ClientReadableStream,
  credentials,
  type GrpcObject,
  loadPackageDefinition,
  type ServiceClientConstructor,
} from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisProcess, startRedis } from '../../../test/support/redis-server.js';
import { descriptor, rlsClient, runtimeDir, serviceEnv, startInProcess } from './harness.test-support.js';
import { packageDefinition } from './protos.js';

const CONFIG =
  'domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: hour, requests_per_unit: 100 }\n';

let redis: RedisProcess;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.stop();
});

function pauseRedis(ms: number): void {
  spawnSync('redis-cli', [
    '-h',
    '127.0.0.1',
    '-p',
    String(redis.port),
    'client',
    'pause',
    String(ms),
    'write',
  ]);
}

/** A Watch stream's updates and how it ended. */
interface WatchLog {
  readonly statuses: string[];
  ended: string | undefined;
}

function watchHealth(port: number): { log: WatchLog; stream: ClientReadableStream<{ status: string }> } {
  const root = loadPackageDefinition(packageDefinition()) as GrpcObject;
  const Health = ((root.grpc as GrpcObject).health as GrpcObject).v1 as GrpcObject;
  const client = new (Health.Health as ServiceClientConstructor)(
    `127.0.0.1:${port}`,
    credentials.createInsecure(),
    // Its own connection, as Envoy's health checker has.
    { 'grpc.use_local_subchannel_pool': 1 },
  );
  const watch = client.Watch as (request: { service: string }) => ClientReadableStream<{ status: string }>;
  const stream = watch.call(client, { service: '' });
  const log: WatchLog = { statuses: [], ended: undefined };
  stream.on('data', (update: { status: string }) => log.statuses.push(update.status));
  stream.on('status', (status: { code: number }) => {
    log.ended ??= `status ${status.code}`;
  });
  stream.on('error', () => {});
  return { log, stream };
}

async function until(test: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!test()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('drain', () => {
  it('a health Watch stream reports NOT_SERVING and stays open while calls drain, then ends', async () => {
    const dir = runtimeDir({ 'd.yaml': CONFIG });
    const server = await startInProcess(
      serviceEnv(dir, {
        REDIS_URL: `127.0.0.1:${redis.port}`,
        SLUICE_DRAIN_MS: '10000',
        SLUICE_TIMEOUT_MS: '5000',
      }),
    );
    const client = rlsClient(server.grpcPort);
    try {
      expect(
        (await client.shouldRateLimit({ domain: 'd', descriptors: [descriptor('k=warm')] })).overall_code,
      ).toBe('OK');
      const { log } = watchHealth(server.grpcPort);
      await until(() => log.statuses.length === 1);
      expect(log.statuses).toEqual(['SERVING']);
      pauseRedis(1500);
      const inFlight = client.shouldRateLimit({ domain: 'd', descriptors: [descriptor('k=held')] });
      await new Promise((r) => setTimeout(r, 100));
      const started = Date.now();
      const closed = server.close();
      await until(() => log.statuses.length === 2);
      expect(log.statuses).toEqual(['SERVING', 'NOT_SERVING']);
      await new Promise((r) => setTimeout(r, 700));
      // Half way through the drain: the call is still held by Redis, the Watch stream still open.
      expect(log.ended).toBeUndefined();
      expect((await inFlight).overall_code).toBe('OK');
      await closed;
      // The drain ended with the call in flight, not at its 10 s bound.
      expect(Date.now() - started).toBeLessThan(5000);
      await until(() => log.ended !== undefined);
      expect(log.statuses).toEqual(['SERVING', 'NOT_SERVING']);
    } finally {
      client.close();
      await server.close().catch(() => {});
      dir.remove();
    }
  });
});
