/**
 * Idempotent checks on a real Redis: the script records the answer in the same call that
 * charges, so a retry after a lost reply (the client gave up at its deadline, the script ran)
 * gets the recorded decision and nothing is charged twice.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLimiter } from '../../packages/core/src/limiter/create-limiter.js';
import { RedisStore } from '../../packages/core/src/stores/redis-store.js';
import type { EvalClient, PolicyInput } from '../../packages/core/src/types.js';
import { type RedisProcess, startRedis } from '../support/redis-server.js';

let redis: RedisProcess;
let client: Redis;

beforeAll(async () => {
  redis = await startRedis();
  client = new Redis(redis.port, '127.0.0.1');
});

afterAll(async () => {
  client?.disconnect();
  await redis?.stop();
});

const TIMEOUT_MS = 200;
const policies: PolicyInput[] = [
  { name: 'payments', burst: 20, rate: '2/s', cost: 5 },
  { name: 'transfers', algorithm: 'sliding-window', limit: 3, window: '60s' },
];

/** A client whose replies arrive after the limiter's deadline while `late` is on: the script still runs. */
function lateReplies(inner: EvalClient) {
  const state = { late: false };
  const delay = <T>(p: Promise<T>): Promise<T> =>
    state.late ? p.then((v) => new Promise<T>((r) => setTimeout(() => r(v), TIMEOUT_MS + 100))) : p;
  const wrapped: EvalClient = {
    evalsha: (...args) => delay(inner.evalsha(...args)),
    eval: (...args) => delay(inner.eval(...args)),
  };
  return { state, client: wrapped };
}

describe('idempotent checks on Redis', () => {
  it('a retry after a lost reply returns the recorded decision; one charge in total', async () => {
    const { state, client: slow } = lateReplies(client);
    const limiter = createLimiter({
      policies,
      prefix: 'idem',
      store: new RedisStore({ client: slow }),
      timeoutMs: TIMEOUT_MS,
      breaker: false,
    });
    state.late = true;
    const lost = await limiter.check({ identity: 'tenant', requestId: 'transfer-42' });
    expect(lost.outcome).toBe('unavailable'); // the client gave up...
    state.late = false;
    await new Promise((r) => setTimeout(r, 200));
    const before = await limiter.peek({ identity: 'tenant' });
    expect(before.source).toBe('store');
    expect(before.results.map((r) => r.remaining)).toEqual([15, 2]); // ...but Redis charged once
    const retry = await limiter.check({ identity: 'tenant', requestId: 'transfer-42' });
    expect(retry).toMatchObject({ allowed: true, outcome: 'allowed', source: 'store' });
    expect(retry.results.map((r) => r.remaining)).toEqual([15, 2]);
    const after = await limiter.peek({ identity: 'tenant' });
    expect(after.results.map((r) => r.remaining)).toEqual([15, 2]);
  });

  it('keeps the record in the identity slot and lets it expire', async () => {
    const limiter = createLimiter({
      policies,
      prefix: 'idem2',
      store: new RedisStore({ client }),
      timeoutMs: 5000,
      idempotency: { ttlMs: 30_000 },
    });
    await limiter.check({ identity: '{hostile}', requestId: 'r-1' });
    const keys = await client.keys('idem2:*');
    const record = keys.find((k) => k.includes(':~rid:'));
    expect(record).toBeDefined();
    const tag = (k: string) => k.slice(k.indexOf('{') + 1, k.indexOf('}'));
    expect(new Set(keys.map(tag)).size).toBe(1);
    const ttl = await client.pttl(record!);
    expect(ttl).toBeGreaterThan(25_000);
    expect(ttl).toBeLessThanOrEqual(30_000);
  });
});
