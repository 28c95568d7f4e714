/**
 * The deadline miss on every adapter (Express 5 and 4, Koa 3 and 2, NestJS on Express and on
 * Fastify, Hono): a real redis-server behind the fault proxy, which turns into a Redis that
 * never answers (blackhole). Under `failMode: 'closed'` each request is answered 503 by the
 * limiter's deadline. Nothing else can end the wait: the ioredis client has no command timeout,
 * the HTTP client none either, and the proxy delivers no byte. The counts are exact: the proxy
 * holds the calls that left for Redis and delivers none, and once the breaker opens no call
 * leaves at all.
 */
import { createLimiter, type DecisionEvent, type PolicyInput } from '@sluice/core';
import { createRedisStore } from '@sluice/core/node';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { DECIDE_SCRIPTS } from '../../packages/core/src/redis/script.js';
import { EXPECTED } from '../support/expected.js';
import { type FaultProxy, startFaultProxy } from '../support/fault-proxy.js';
import { type RedisProcess, startRedis } from '../support/redis-server.js';
import { HARNESSES, type Served } from './adapters.js';
import { json, request } from './client.js';

/** The store deadline under test. */
const TIMEOUT_MS = 200;
/** Consecutive deadline misses that open the breaker. */
const FAILURE_THRESHOLD = 2;

const STRICT: PolicyInput = {
  name: 'strict',
  algorithm: 'token-bucket',
  burst: 1000,
  rate: '1000/s',
  failMode: 'closed',
};

let redis: RedisProcess;
let admin: Redis;
let proxy: FaultProxy;

beforeAll(async () => {
  redis = await startRedis();
  admin = new Redis(redis.port, '127.0.0.1');
  proxy = await startFaultProxy({ port: redis.port });
});

afterAll(async () => {
  admin?.disconnect();
  await proxy?.close();
  await redis?.stop();
});

describe.each(HARNESSES)('$name', (harness) => {
  let served: Served | undefined;
  let client: Redis | undefined;
  afterEach(async () => {
    await served?.close();
    served = undefined;
    // Drop the held bytes and the connection, then let the next adapter connect normally.
    proxy.setMode('reset');
    client?.disconnect();
    client = undefined;
    proxy.setMode('pass');
    await admin.flushall();
  });

  test('a Redis that never answers: 503 problem+json by the deadline, then the breaker stops the calls', async () => {
    for (const script of DECIDE_SCRIPTS) await admin.script('LOAD', script.source);
    // No command timeout and unlimited retries: only the limiter's deadline can end a call.
    client = new Redis(proxy.port, '127.0.0.1', { maxRetriesPerRequest: null });
    await client.ping();
    const events: DecisionEvent[] = [];
    // A fixed clock: the breaker's cool-down never passes within the test.
    const now = 1_800_000_000_000;
    const limiter = createLimiter({
      policies: [STRICT],
      store: createRedisStore(client),
      timeoutMs: TIMEOUT_MS,
      breaker: { failureThreshold: FAILURE_THRESHOLD, cooldownMs: 60_000 },
      clock: () => now,
      onDecision: (event) => events.push(event),
    });
    served = await harness.serve({ limiter }, 'route');

    // Redis answers: decided by the store.
    const first = await request(`${served.url}/items/1`);
    expect(first.status).toBe(200);
    expect(first.headers.ratelimit).toBe('"strict";r=999;t=1');

    proxy.setMode('blackhole');
    proxy.resetCounters();
    for (let i = 1; i <= FAILURE_THRESHOLD; i++) {
      const reply = await request(`${served.url}/items/1`);
      expect(reply.status).toBe(503);
      expect(reply.headers['content-type']?.split(';')[0]).toBe('application/problem+json');
      expect(json(reply)).toEqual(EXPECTED.unavailable());
      expect(reply.headers['retry-after']).toBeUndefined();
      expect(reply.headers.ratelimit).toBeUndefined();
      // The deadline never fires early ...
      expect(reply.elapsedMs).toBeGreaterThanOrEqual(TIMEOUT_MS);
      // ... and the call did leave for Redis, which received nothing: the 503 is the deadline's.
      expect(proxy.counters.delayedChunks).toBeGreaterThanOrEqual(i);
      expect(proxy.counters.bytesUp).toBe(0);
      expect(proxy.counters.bytesDown).toBe(0);
    }
    const heldCalls = proxy.counters.delayedChunks;
    expect(limiter.breakerState).toBe('open');

    // Open breaker: still 503 under fail closed, and not one more byte leaves for Redis.
    const rejected = await request(`${served.url}/items/1`);
    expect(rejected.status).toBe(503);
    expect(json(rejected)).toEqual(EXPECTED.unavailable());
    expect(proxy.counters.delayedChunks).toBe(heldCalls);

    expect(events.map((e) => [e.outcome, e.source])).toEqual([
      ['allowed', 'store'],
      ...Array.from({ length: FAILURE_THRESHOLD + 1 }, () => ['unavailable', 'fail-closed']),
    ]);
    expect(events.flatMap((e) => e.metricOutcomes.map((m) => m.outcome))).toEqual([
      'allowed',
      ...Array.from({ length: FAILURE_THRESHOLD + 1 }, () => 'fail_closed'),
    ]);
  });
});
