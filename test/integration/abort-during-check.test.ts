/**
 * A client that goes away while its request's concurrency check is still with Redis: the check
 * takes a slot, and the slot must be freed although the response had closed before the decision
 * came back (the adapter's end-of-response signal fired before it listened). Redis is reached
 * through a proxy adding 100 ms each way, so the abort lands inside the check. Every app.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { type AppNode, EXAMPLE_APPS, startApps, stopApps } from '../support/apps.js';
import { type FaultProxy, startFaultProxy } from '../support/fault-proxy.js';
import { type RedisProcess, startRedis } from '../support/redis-server.js';
import { closeAgents, openRequest, request } from './client.js';

/** One-way delay the proxy adds between the apps and Redis. */
const LATENCY_MS = 100;

let redis: RedisProcess;
let proxy: FaultProxy;

beforeAll(async () => {
  redis = await startRedis();
  proxy = await startFaultProxy({ port: redis.port });
});
afterAll(async () => {
  closeAgents();
  await proxy?.close();
  await redis?.stop();
});

describe.each(EXAMPLE_APPS)('$name example app, Redis 100 ms away', (spec) => {
  let node: AppNode | undefined;
  beforeAll(async () => {
    [node] = await startApps([spec.name], {
      REDIS_URL: proxy.url,
      SLUICE_PREFIX: `it-abort-check-${spec.name}-${randomUUID().slice(0, 8)}`,
      SLUICE_TIMEOUT_MS: '2000',
    });
    proxy.setLatency(LATENCY_MS);
  });
  afterAll(async () => {
    proxy.setLatency(0);
    await stopApps(node === undefined ? [] : [node]);
  });

  test('/concurrent: a client gone before its check answered leaves no slot held', async () => {
    const headers = { 'x-api-key': `abort-check-${randomUUID()}` };
    const gone = openRequest(`${node!.url}/concurrent?ms=0`, headers);
    await sleep(LATENCY_MS / 2);
    gone.abort();
    // The check comes back (taking a slot) and its release goes out: well within 4 x the latency.
    await sleep(8 * LATENCY_MS);
    const replies = await Promise.all(
      Array.from({ length: 3 }, () => request(`${node!.url}/concurrent?ms=500`, { headers })),
    );
    expect(replies.map((reply) => reply.status)).toEqual([200, 200, 200]);
  });
});
