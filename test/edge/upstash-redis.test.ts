/**
 * `fromUpstashRedis` driven by the real `@upstash/redis` client, over HTTP to the REST test
 * server in front of a real redis-server on 127.0.0.1: admits then denies, recovers from
 * SCRIPT FLUSH through EVAL, surfaces a missing script as NOSCRIPT without echoing keys, is
 * unavailable (never over_limit) when the token is refused, and decides exactly as ioredis
 * does for every algorithm.
 */
import { createHash } from 'node:crypto';
import { Redis as UpstashRedis } from '@upstash/redis';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  createLimiter,
  type EvalClient,
  fromUpstashRedis,
  type PolicyInput,
  RedisStore,
} from '../../packages/core/src/index.js';
import { type RedisProcess, startRedis } from '../support/redis-server.js';
import { type RestRedisServer, startRestRedisServer } from '../support/rest-redis-server.js';

let redis: RedisProcess;
let rest: RestRedisServer;
let ioredis: Redis;

beforeAll(async () => {
  redis = await startRedis();
  rest = await startRestRedisServer({ redisUrl: redis.url, token: 'upstash-token' });
  ioredis = new Redis(redis.url);
});

afterAll(async () => {
  ioredis?.disconnect();
  await rest?.stop();
  await redis?.stop();
});

beforeEach(async () => {
  await ioredis.flushall();
  await ioredis.script('FLUSH');
  rest.commands.length = 0;
});

/** The real client, as the core README tells users to build it; no retries, so a failure is one request. */
function upstash(token = rest.token): UpstashRedis {
  return new UpstashRedis({
    url: rest.url,
    token,
    automaticDeserialization: false,
    enableTelemetry: false,
    retry: false,
  });
}

/** Generous deadline: this file is about answers, not latency, on a shared 2-core machine. */
const TIMEOUT_MS = 5000;

describe('fromUpstashRedis with @upstash/redis', () => {
  it('admits N, then denies with over_limit decided by the store, one EVAL then EVALSHA', async () => {
    const limiter = createLimiter({
      policies: [{ name: 'api', algorithm: 'sliding-log', limit: 3, window: '1m' }],
      store: new RedisStore({ client: fromUpstashRedis(upstash()) }),
      timeoutMs: TIMEOUT_MS,
      denyCache: false,
    });
    const decisions = [];
    for (let i = 0; i < 5; i++) decisions.push(await limiter.check({ identity: 'tenant é {1}' }));
    expect(decisions.map((d) => [d.outcome, d.remaining, d.source])).toEqual([
      ['allowed', 2, 'store'],
      ['allowed', 1, 'store'],
      ['allowed', 0, 'store'],
      ['over_limit', 0, 'store'],
      ['over_limit', 0, 'store'],
    ]);
    expect(rest.commands).toEqual(['EVALSHA', 'EVAL', 'EVALSHA', 'EVALSHA', 'EVALSHA', 'EVALSHA']);
  });

  it('keeps deciding across SCRIPT FLUSH: NOSCRIPT from the client, EVAL reloads, no unavailable', async () => {
    const limiter = createLimiter({
      policies: [{ name: 'burst', algorithm: 'token-bucket', burst: 10, rate: '1/s' }],
      store: new RedisStore({ client: fromUpstashRedis(upstash()) }),
      timeoutMs: TIMEOUT_MS,
      breaker: false,
    });
    expect((await limiter.check({ identity: 'flush' })).outcome).toBe('allowed');
    await ioredis.script('FLUSH');
    rest.commands.length = 0;
    const afterFlush = await limiter.check({ identity: 'flush' });
    expect([afterFlush.outcome, afterFlush.source]).toEqual(['allowed', 'store']);
    expect(rest.commands).toEqual(['EVALSHA', 'EVAL']);
  });

  it('turns the client error for a missing script into NOSCRIPT, without the keys it was given', async () => {
    const client = fromUpstashRedis(upstash());
    const script = 'return KEYS[1]';
    const sha = createHash('sha1').update(script).digest('hex');
    const error = (await client.evalsha(sha, 1, 'secret-identity', 'arg').catch((e: unknown) => e)) as Error;
    expect(error).toBeInstanceOf(Error);
    expect(error.message.startsWith('NOSCRIPT')).toBe(true);
    expect(error.message).not.toContain('secret-identity');
    await expect(client.eval(script, 1, 'k', 'arg')).resolves.toBe('k');
    await expect(client.evalsha(sha, 1, 'k2')).resolves.toBe('k2');
  });

  it('is unavailable (never over_limit) when the REST server refuses the token', async () => {
    const limiter = createLimiter({
      policies: [{ name: 'api', algorithm: 'fixed-window', limit: 4, window: '1m', failMode: 'closed' }],
      store: new RedisStore({ client: fromUpstashRedis(upstash('not-the-token')) }),
      timeoutMs: TIMEOUT_MS,
      breaker: false,
    });
    for (let i = 0; i < 2; i++) {
      const decision = await limiter.check({ identity: 'tenant-1' });
      expect([decision.outcome, decision.allowed]).toEqual(['unavailable', false]);
    }
    expect(await ioredis.dbsize()).toBe(0);
  });
});

describe('@upstash/redis and ioredis give identical decisions', () => {
  const policies: PolicyInput[] = [
    { name: 'tb', algorithm: 'token-bucket', burst: 5, rate: '2/s' },
    { name: 'gcra', algorithm: 'gcra', burst: 4, rate: '3/s' },
    { name: 'sw', algorithm: 'sliding-window', limit: 6, window: '2s' },
    { name: 'fw', algorithm: 'fixed-window', limit: 5, window: '1s' },
    { name: 'log', algorithm: 'sliding-log', limit: 4, window: '1500ms' },
  ];

  async function run(client: EvalClient, prefix: string): Promise<unknown[]> {
    let nowMs = 1_800_000_000_000;
    const clock = () => nowMs;
    const limiter = createLimiter({
      policies,
      prefix,
      store: new RedisStore({ client, clock }),
      clock,
      timeoutMs: TIMEOUT_MS,
      denyCache: false,
      breaker: false,
    });
    const seen: unknown[] = [];
    // Bursts, pauses shorter and longer than the windows, a step back in time, costs 1-2.
    const steps = [0, 0, 0, 50, 50, 100, 0, -300, 0, 400, 0, 0, 700, 30, -30, 1200, 0, 0, 0, 90, 2500, 0];
    for (const [i, stepMs] of steps.entries()) {
      nowMs += stepMs;
      const decision = await limiter.check({ identity: `id-${i % 2}`, cost: 1 + (i % 3 === 0 ? 1 : 0) });
      seen.push(decision.results.map((r) => [r.policy, r.allowed, r.remaining, r.resetMs, r.retryAfterMs]));
    }
    return seen;
  }

  it('for every algorithm, several policies per call', async () => {
    const viaIoredis = await run(ioredis, 'diff-io');
    const viaUpstash = await run(fromUpstashRedis(upstash()), 'diff-upstash');
    expect(viaUpstash).toEqual(viaIoredis);
    const flat = (viaIoredis as [string, boolean][][]).flat();
    expect(flat.some(([, allowed]) => allowed)).toBe(true);
    expect(flat.some(([, allowed]) => !allowed)).toBe(true);
  });
});
