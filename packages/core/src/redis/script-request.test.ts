import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisProcess, startRedis } from '../../../../test/support/redis-server.js';
import {
  entriesFor,
  makePolicy,
  mixedPoliciesArb,
  multiOpsArb,
  startTimeArb,
} from '../algorithms/testing.test-support.js';
import { MemoryStore } from '../stores/memory-store.js';
import type { StoreEntry, StoreMode, StoreVerdict } from '../types.js';
import { RESET_SCRIPT } from './script.js';
import { evalDecide, type TestRequest } from './script.test-support.js';

/**
 * Time a fast-check property of this file may take: its runs take 1-3 s on a quiet 2-core machine
 * and several times that in a full parallel run, past the 5 s default.
 */
const PROPERTY_TIMEOUT_MS = 60_000;

let server: RedisProcess;
let redis: Redis;
let run = 0;
const fresh = (): string => `q${++run}`;

beforeAll(async () => {
  server = await startRedis();
  redis = new Redis(server.port, '127.0.0.1', { maxRetriesPerRequest: 1 });
});

afterAll(async () => {
  redis?.disconnect();
  await server?.stop();
});

type RequestDecide = (
  entries: readonly StoreEntry[],
  mode: StoreMode,
  nowMs: number,
  request?: TestRequest,
) => Promise<StoreVerdict[]>;

function memoryRequestDecide(): RequestDecide {
  let now = 0;
  const store = new MemoryStore({ clock: () => now });
  return (entries, mode, nowMs, request) => {
    now = nowMs;
    return store.decide(
      entries,
      mode,
      request === undefined ? undefined : { requestKey: request.key, requestTtlMs: request.ttlMs },
    );
  };
}

const redisRequestDecide = (): RequestDecide => (entries, mode, nowMs, request) =>
  evalDecide(redis, entries, mode, nowMs, request);

const T0 = 1_764_400_000_000.5;

describe.each([
  ['MemoryStore', memoryRequestDecide],
  ['Redis script', redisRequestDecide],
] as const)('idempotent requests on %s', (_name, make) => {
  it('replays an admitted request and charges it once', async () => {
    const decide = make();
    const p = fresh();
    const entry: StoreEntry = { key: `${p}:{id}:tb`, policy: makePolicy('token-bucket', 5, 60_000), cost: 2 };
    const request = { key: `${p}:{id}:rid:r1`, ttlMs: 30_000 };
    const first = await decide([entry], 'consume', T0, request);
    expect(first).toEqual([{ allowed: true, remaining: 3, resetMs: 24_000, retryAfterMs: 0 }]);
    for (const at of [T0, T0 + 5, T0 + 29_000])
      expect(await decide([entry], 'consume', at, request)).toEqual(first);
    expect((await decide([entry], 'peek', T0))[0]?.remaining).toBe(3);
  });

  it('replays a denied request even after capacity came back', async () => {
    const decide = make();
    const p = fresh();
    const entry: StoreEntry = { key: `${p}:{id}:fw`, policy: makePolicy('fixed-window', 1, 1000), cost: 1 };
    const request = { key: `${p}:{id}:rid:r2`, ttlMs: 60_000 };
    expect((await decide([entry], 'consume', T0))[0]?.allowed).toBe(true);
    const denied = await decide([entry], 'consume', T0 + 1, request);
    expect(denied[0]?.allowed).toBe(false);
    expect(await decide([entry], 'consume', T0 + 5000, request)).toEqual(denied);
    expect((await decide([entry], 'consume', T0 + 5000))[0]?.allowed).toBe(true);
  });

  it('lets peek ignore the record, and decides afresh once the record expired', async () => {
    const decide = make();
    const p = fresh();
    const entry: StoreEntry = { key: `${p}:{id}:g`, policy: makePolicy('gcra', 4, 4000), cost: 1 };
    const request = { key: `${p}:{id}:rid:r3`, ttlMs: 100 };
    expect((await decide([entry], 'peek', T0, request))[0]?.remaining).toBe(4);
    expect((await decide([entry], 'consume', T0, request))[0]?.remaining).toBe(3); // peek recorded nothing
    expect((await decide([entry], 'peek', T0, request))[0]?.remaining).toBe(3);
    expect((await decide([entry], 'consume', T0 + 100, request))[0]?.remaining).toBe(3); // replay
    expect((await decide([entry], 'consume', T0 + 100.5, request))[0]?.remaining).toBe(2); // expired: charged
  });

  it('replays a request that only a shadow entry denied: one record, nothing charged again', async () => {
    const decide = make();
    const p = fresh();
    const bucket: StoreEntry = {
      key: `${p}:{id}:tb`,
      policy: makePolicy('token-bucket', 5, 60_000),
      cost: 1,
    };
    const probe: StoreEntry = {
      key: `${p}:{id}:probe`,
      policy: { ...makePolicy('fixed-window', 1, 60_000, 'probe'), shadow: true },
      cost: 1,
    };
    expect((await decide([probe], 'consume', T0)).map((v) => v.allowed)).toEqual([true]);
    const request = { key: `${p}:{id}:rid:r5`, ttlMs: 60_000 };
    const first = await decide([bucket, probe], 'consume', T0, request);
    expect(first.map((v) => [v.allowed, v.remaining])).toEqual([
      [true, 4],
      [false, 0],
    ]);
    for (const at of [T0, T0 + 1000])
      expect(await decide([bucket, probe], 'consume', at, request)).toEqual(first);
    expect((await decide([bucket], 'peek', T0))[0]?.remaining).toBe(4);
  });

  it('leaves a record of another set of entries alone', async () => {
    const decide = make();
    const p = fresh();
    const a: StoreEntry = { key: `${p}:{id}:a`, policy: makePolicy('sliding-window', 3, 1000), cost: 1 };
    const b: StoreEntry = { key: `${p}:{id}:b`, policy: makePolicy('sliding-log', 3, 1000), cost: 1 };
    const request = { key: `${p}:{id}:rid:r4`, ttlMs: 60_000 };
    const first = await decide([a], 'consume', T0, request);
    expect((await decide([a, b], 'consume', T0, request)).map((v) => v.remaining)).toEqual([1, 2]);
    expect(await decide([a], 'consume', T0, request)).toEqual(first);
  });
});

describe('request records in Redis', () => {
  it('live for requestTtlMs and exist only when asked for', async () => {
    const p = fresh();
    const entry: StoreEntry = { key: `${p}:{id}:tb`, policy: makePolicy('token-bucket', 5, 60_000), cost: 1 };
    await evalDecide(redis, [entry], 'consume');
    expect(await redis.keys(`${p}:*`)).toEqual([entry.key]);
    const request = { key: `${p}:{id}:rid:x`, ttlMs: 1500 };
    await evalDecide(redis, [entry], 'consume', undefined, request);
    const pttl = await redis.pttl(request.key);
    expect(pttl).toBeGreaterThan(1000);
    expect(pttl).toBeLessThanOrEqual(1500);
  });

  it('survive a lost reply: the retry gets the first decision and nothing more is charged', async () => {
    const p = fresh();
    const entry: StoreEntry = {
      key: `${p}:{id}:fw`,
      policy: makePolicy('fixed-window', 10, 60_000),
      cost: 3,
    };
    const request = { key: `${p}:{id}:rid:lost`, ttlMs: 60_000 };
    // the first call ran in Redis but its reply never reached the caller
    void (await evalDecide(redis, [entry], 'consume', T0, request));
    const retry = await evalDecide(redis, [entry], 'consume', T0 + 10, request);
    expect(retry).toEqual([{ allowed: true, remaining: 7, resetMs: expect.any(Number), retryAfterMs: 0 }]);
    expect((await evalDecide(redis, [entry], 'peek', T0 + 10))[0]?.remaining).toBe(7);
  });
});

describe('MemoryStore and the Redis script agree on idempotent requests', () => {
  it(
    'for random multi-policy histories, enforced and shadow mixed, with request ids (differential)',
    async () => {
      await fc.assert(
        fc.asyncProperty(
          mixedPoliciesArb.chain((ps) =>
            fc.tuple(
              fc.constant(ps),
              multiOpsArb(ps),
              fc.array(fc.option(fc.integer({ min: 0, max: 2 }), { nil: undefined }), {
                minLength: 40,
                maxLength: 40,
              }),
              fc.constantFrom(60_000, 90_000.5, 600_000),
              startTimeArb,
            ),
          ),
          async ([policies, ops, rids, ttlMs, t0]) => {
            const memory = memoryRequestDecide();
            const prefix = fresh();
            let now = t0;
            for (let i = 0; i < ops.length; i++) {
              const op = ops[i]!;
              now += op.dtMs;
              const entries = entriesFor(prefix, policies, op);
              const rid = rids[i];
              const request =
                rid === undefined ? undefined : { key: `${prefix}:{id${op.identity}}:rid:${rid}`, ttlMs };
              const fromRedis = await evalDecide(redis, entries, op.mode, now, request);
              expect(fromRedis).toEqual(await memory(entries, op.mode, now, request));
            }
          },
        ),
        { numRuns: 40 },
      );
    },
    PROPERTY_TIMEOUT_MS,
  );
});

describe('reset script', () => {
  it('carries the SHA1 that SCRIPT LOAD returns and deletes every key given', async () => {
    expect(await redis.script('LOAD', RESET_SCRIPT.source)).toBe(RESET_SCRIPT.sha1);
    const p = fresh();
    await redis.set(`${p}:{r}:a`, '1');
    await redis.zadd(`${p}:{r}:b`, 1, 'm');
    expect(await redis.evalsha(RESET_SCRIPT.sha1, 3, `${p}:{r}:a`, `${p}:{r}:b`, `${p}:{r}:c`)).toBe(2);
    expect(await redis.exists(`${p}:{r}:a`, `${p}:{r}:b`)).toBe(0);
    expect(await redis.evalsha(RESET_SCRIPT.sha1, 0)).toBe(0);
    const many = Array.from({ length: 2500 }, (_, i) => `${p}:{r}:k${i}`);
    await redis.mset(...many.flatMap((k) => [k, '1']));
    expect(await redis.evalsha(RESET_SCRIPT.sha1, many.length, ...many)).toBe(2500);
  });
});
