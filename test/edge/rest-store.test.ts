/**
 * RedisStore + createLimiter over the Upstash REST protocol (REST test server in front of a
 * real redis-server): N allowed then denied, the EVALSHA -> EVAL fallback after SCRIPT FLUSH
 * without a single unavailable decision, and the same decisions as over ioredis for every
 * algorithm (clock injected so both runs see the same time).
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  createLimiter,
  createRestEvalClient,
  type Decision,
  type EvalClient,
  fromUpstashRedis,
  type PolicyInput,
  RedisStore,
  restTransport,
} from '../../packages/core/src/index.js';
import type { UpstashRedisLike } from '../../packages/core/src/redis/rest-client.js';
import { type RedisProcess, startRedis } from '../support/redis-server.js';
import { type RestRedisServer, startRestRedisServer } from '../support/rest-redis-server.js';

let redis: RedisProcess;
let rest: RestRedisServer;
let ioredis: Redis;

beforeAll(async () => {
  redis = await startRedis();
  rest = await startRestRedisServer({ redisUrl: redis.url, token: 'store-token' });
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

const restClient = (responseEncoding: 'base64' | 'none' = 'base64') =>
  createRestEvalClient({ url: rest.url, token: rest.token, responseEncoding });

/** Generous deadline: the 2-core test machine is shared, and this test is about answers, not latency. */
const TIMEOUT_MS = 5000;

describe('createLimiter + RedisStore over Upstash REST', () => {
  it('admits N requests, then denies with over_limit decided by the store', async () => {
    const limiter = createLimiter({
      // A rolling window: no window boundary can fall inside the test and reset the count.
      policies: [{ name: 'api', algorithm: 'sliding-log', limit: 4, window: '1m' }],
      store: new RedisStore({ client: restClient() }),
      timeoutMs: TIMEOUT_MS,
      denyCache: false,
    });
    const decisions: Decision[] = [];
    for (let i = 0; i < 6; i++) decisions.push(await limiter.check({ identity: 'tenant-1' }));
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, true, false, false]);
    expect(decisions.map((d) => d.remaining)).toEqual([3, 2, 1, 0, 0, 0]);
    for (const d of decisions) expect(d.source).toBe('store');
    for (const d of decisions.slice(4)) {
      expect(d.outcome).toBe('over_limit');
      expect(d.policy).toBe('api');
      expect(d.retryAfterMs).toBeGreaterThan(0);
      expect(d.retryAfterMs).toBeLessThanOrEqual(60_000);
    }
    // Another identity has its own counter.
    expect((await limiter.check({ identity: 'tenant-2' })).allowed).toBe(true);
    expect(rest.commands.filter((c) => c === 'EVAL')).toHaveLength(1);
  });

  it('keeps deciding across SCRIPT FLUSH: EVALSHA meets NOSCRIPT, EVAL reloads, no unavailable', async () => {
    const limiter = createLimiter({
      policies: [{ name: 'burst', algorithm: 'token-bucket', burst: 10, rate: '1/s' }],
      store: new RedisStore({ client: restClient() }),
      timeoutMs: TIMEOUT_MS,
      breaker: false,
    });
    const outcomes: string[] = [];
    for (let i = 0; i < 3; i++) outcomes.push((await limiter.check({ identity: 'flush' })).outcome);
    await ioredis.script('FLUSH');
    rest.commands.length = 0;
    const afterFlush = await limiter.check({ identity: 'flush' });
    outcomes.push(afterFlush.outcome);
    expect(outcomes).toEqual(['allowed', 'allowed', 'allowed', 'allowed']);
    expect(afterFlush.source).toBe('store');
    expect(afterFlush.remaining).toBe(6);
    expect(rest.commands).toEqual(['EVALSHA', 'EVAL']);
  });

  it('is unavailable (never over_limit) when the REST server refuses the token', async () => {
    const limiter = createLimiter({
      policies: [{ name: 'api', algorithm: 'fixed-window', limit: 4, window: '1m', failMode: 'closed' }],
      store: new RedisStore({ client: createRestEvalClient({ url: rest.url, token: 'not-the-token' }) }),
      timeoutMs: TIMEOUT_MS,
    });
    const decision = await limiter.check({ identity: 'tenant-1' });
    expect(decision.outcome).toBe('unavailable');
    expect(decision.allowed).toBe(false);
  });

  it('works through fromUpstashRedis with an @upstash/redis-shaped client', async () => {
    const upstashShaped: UpstashRedisLike = {
      evalsha: (sha, keys, args) => post(['EVALSHA', sha, keys.length, ...keys, ...args]),
      eval: (script, keys, args) => post(['EVAL', script, keys.length, ...keys, ...args]),
    };
    async function post(command: unknown[]): Promise<unknown> {
      const res = await fetch(rest.url, {
        method: 'POST',
        headers: { Authorization: `Bearer ${rest.token}` },
        body: JSON.stringify(command),
      });
      const body = (await res.json()) as { result?: unknown; error?: string };
      if (body.error !== undefined) throw new Error(`${body.error}, command was: ${JSON.stringify(command)}`);
      return body.result;
    }
    const limiter = createLimiter({
      policies: [{ name: 'api', algorithm: 'sliding-log', limit: 2, window: '1m' }],
      store: new RedisStore({ client: fromUpstashRedis(upstashShaped) }),
      timeoutMs: TIMEOUT_MS,
      denyCache: false,
    });
    const allowed: boolean[] = [];
    for (let i = 0; i < 4; i++) allowed.push((await limiter.check({ identity: 'upstash' })).allowed);
    expect(allowed).toEqual([true, true, false, false]);
    expect(rest.commands.slice(0, 3)).toEqual(['EVALSHA', 'EVAL', 'EVALSHA']);
  });
});

describe('RedisStore over restTransport', () => {
  it('decides, falls back to EVAL after SCRIPT FLUSH, and batches a turn in one POST when told it may', async () => {
    const store = new RedisStore({
      transport: restTransport({ url: rest.url, token: rest.token, singleSlot: false }),
      maxBatchWaitMs: 60_000,
    });
    const limiter = createLimiter({
      policies: [{ name: 'api', algorithm: 'sliding-log', limit: 2, window: '1m' }],
      store,
      timeoutMs: TIMEOUT_MS,
      denyCache: false,
    });
    const allowed: boolean[] = [];
    for (let i = 0; i < 3; i++) allowed.push((await limiter.check({ identity: 'rt' })).allowed);
    expect(allowed).toEqual([true, true, false]);
    expect(rest.commands).toEqual(['EVALSHA', 'EVAL', 'EVALSHA', 'EVALSHA']);
    rest.commands.length = 0;
    const policy = limiter.policies[0]!;
    const entries = (identity: string) => [{ key: `rt:{${identity}}:api`, policy, cost: 1 }];
    const verdicts = await Promise.all(
      ['a', 'b', 'c', 'a'].map((id) => store.decide(entries(id), 'consume')),
    );
    expect(verdicts.map((v) => v[0]!.remaining)).toEqual([1, 1, 1, 0]);
    expect(rest.commands).toEqual(['EVALSHA']);
  });

  it('keeps one POST per hash slot by default, and names a bad option', async () => {
    const store = new RedisStore({ transport: restTransport({ url: rest.url, token: rest.token }) });
    const policy = createLimiter({ policies: [{ name: 'p', limit: 5, window: '1m' }] }).policies[0]!;
    await Promise.all(
      ['x', 'y'].map((id) => store.decide([{ key: `rs:{${id}}:p`, policy, cost: 1 }], 'consume')),
    );
    expect(rest.commands.filter((c) => c === 'EVALSHA')).toHaveLength(2);
    expect(() => restTransport({ url: rest.url, token: '' })).toThrow(
      'restTransport: "token" must be a non-empty string, got an empty string',
    );
    // @ts-expect-error: a string where a boolean belongs
    expect(() => restTransport({ url: rest.url, token: rest.token, singleSlot: 'no' })).toThrow(
      'restTransport: "singleSlot" must be a boolean, got no',
    );
  });
});

describe('REST and ioredis give identical decisions', () => {
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
    // A fixed, uneven schedule: bursts, pauses shorter and longer than the windows, costs 1-2.
    const steps = [0, 0, 0, 50, 50, 100, 0, 0, 400, 0, 0, 0, 700, 30, 30, 1200, 0, 0, 0, 0, 90, 2500, 0, 0];
    for (const [i, stepMs] of steps.entries()) {
      nowMs += stepMs;
      const decision = await limiter.check({ identity: `id-${i % 2}`, cost: 1 + (i % 3 === 0 ? 1 : 0) });
      seen.push(
        decision.results.map((r) => [
          r.policy,
          r.allowed,
          r.remaining,
          r.resetMs,
          r.retryAfterMs,
          decision.source,
        ]),
      );
    }
    return seen;
  }

  it('for every algorithm, several policies per call, both response encodings', async () => {
    const viaIoredis = await run(ioredis, 'diff-io');
    const viaRestBase64 = await run(restClient('base64'), 'diff-b64');
    const viaRestPlain = await run(restClient('none'), 'diff-plain');
    expect(viaRestBase64).toEqual(viaIoredis);
    expect(viaRestPlain).toEqual(viaIoredis);
    // The schedule exercises both answers.
    const flat = (viaIoredis as [string, boolean][][]).flat();
    expect(flat.some(([, allowed]) => allowed)).toBe(true);
    expect(flat.some(([, allowed]) => !allowed)).toBe(true);
  });
});
