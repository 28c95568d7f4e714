/**
 * The module's own store and deadline (`RateLimitModule.forRoot({ store, timeoutMs })`) against
 * a Redis that never answers: a real redis-server behind the fault proxy, blackholed. On the
 * Express and the Fastify platform, a `failMode: 'closed'` route answers 503 problem+json,
 * ended by the module's deadline alone (the ioredis client has no command timeout), and the
 * proxy delivers not one byte to Redis.
 */
import 'reflect-metadata';
import type { AddressInfo } from 'node:net';
import { Controller, Get, type INestApplication, UseGuards } from '@nestjs/common';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { createRedisStore } from '@sluice/core/node';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { EXPECTED, json, request } from '../../../test/support/adapter-client.js';
import { type FaultProxy, startFaultProxy } from '../../../test/support/fault-proxy.js';
import { type RedisProcess, startRedis } from '../../../test/support/redis-server.js';
import { DECIDE_SCRIPTS } from '../../core/src/redis/script.js';
import { RateLimit, RateLimitGuard, RateLimitModule } from './index.js';

/** The module's store deadline under test. */
const TIMEOUT_MS = 200;

@Controller()
@UseGuards(RateLimitGuard)
class StrictController {
  @Get('strict')
  @RateLimit('strict')
  strict() {
    return { ok: true };
  }
}

let redis: RedisProcess;
let admin: Redis;
let proxy: FaultProxy;

beforeAll(async () => {
  redis = await startRedis();
  admin = new Redis(redis.port, '127.0.0.1');
  for (const script of DECIDE_SCRIPTS) await admin.script('LOAD', script.source);
  proxy = await startFaultProxy({ port: redis.port });
});

afterAll(async () => {
  admin?.disconnect();
  await proxy?.close();
  await redis?.stop();
});

describe.each(['express', 'fastify'] as const)('NestJS on %s, module store and timeoutMs', (platform) => {
  let app: INestApplication | undefined;
  let client: Redis | undefined;
  afterEach(async () => {
    await app?.close();
    app = undefined;
    proxy.setMode('reset');
    client?.disconnect();
    client = undefined;
    proxy.setMode('pass');
  });

  it('a Redis that never answers: 503 problem+json by the module deadline, nothing reaches Redis', async () => {
    // No command timeout and unlimited retries: only the limiter's deadline can end a call.
    client = new Redis(proxy.port, '127.0.0.1', { maxRetriesPerRequest: null });
    await client.ping();
    const moduleRef = await Test.createTestingModule({
      imports: [
        RateLimitModule.forRoot({
          policies: [{ name: 'strict', burst: 1000, rate: '1000/s', failMode: 'closed' }],
          store: createRedisStore(client),
          timeoutMs: TIMEOUT_MS,
          breaker: false,
        }),
      ],
      controllers: [StrictController],
    }).compile();
    app =
      platform === 'fastify'
        ? moduleRef.createNestApplication(new FastifyAdapter(), { logger: false })
        : moduleRef.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    const url = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}/strict`;

    const answered = await request(url);
    expect(answered.status).toBe(200);
    expect(answered.headers.ratelimit).toBe('"strict";r=999;t=1');

    proxy.setMode('blackhole');
    proxy.resetCounters();
    for (let i = 1; i <= 3; i++) {
      const started = performance.now();
      const reply = await request(url);
      const elapsedMs = performance.now() - started;
      expect(reply.status).toBe(503);
      expect(reply.headers['content-type']).toBe('application/problem+json; charset=utf-8');
      expect(json(reply)).toEqual(EXPECTED.unavailable());
      expect(reply.headers['retry-after']).toBeUndefined();
      // Not before the deadline; and the call went out and is held: Redis received nothing.
      expect(elapsedMs).toBeGreaterThanOrEqual(TIMEOUT_MS);
      expect(proxy.counters.delayedChunks).toBeGreaterThanOrEqual(i);
      expect(proxy.counters.bytesUp).toBe(0);
    }
  });
});
