/**
 * A "Redis" that accepts connections and never answers (a node:net server on 127.0.0.1):
 * every check ends as `unavailable` within the deadline, never `over_limit`; `closed`, `open`
 * and `local` behave as named; the breaker opens, stops the calls, and closes again once a
 * probe reaches a real Redis.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLimiter } from '../../packages/core/src/limiter/create-limiter.js';
import { createRedisStore } from '../../packages/core/src/node/ioredis.js';
import { DECIDE_SCRIPTS } from '../../packages/core/src/redis/script.js';
import type { RedisStore } from '../../packages/core/src/stores/redis-store.js';
import type { EvalClient, PolicyInput } from '../../packages/core/src/types.js';
import { type RedisProcess, startRedis } from '../support/redis-server.js';

/** Accepts connections, reads everything, answers nothing. */
interface SilentServer {
  readonly url: string;
  close(): Promise<void>;
}

async function startSilentServer(): Promise<SilentServer> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('data', () => {});
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `redis://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

const TIMEOUT_MS = 100;
/** The breaker test's deadline: long enough for a real Redis on a busy machine. */
const BREAKER_TIMEOUT_MS = 300;
/** Generous slack over the deadline for a loaded 2-core machine. */
const SLACK_MS = 400;

let silent: SilentServer;
let silentStore: RedisStore;
let redis: RedisProcess;
let real: Redis;

beforeAll(async () => {
  silent = await startSilentServer();
  silentStore = createRedisStore(silent.url);
  redis = await startRedis();
  real = new Redis(redis.port, '127.0.0.1');
});

afterAll(async () => {
  // quit() would wait for an answer that never comes.
  (silentStore?.client as Redis | undefined)?.disconnect();
  real?.disconnect();
  await silent?.close();
  await redis?.stop();
});

async function timed<T>(run: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await run();
  return { value, ms: performance.now() - started };
}

const closed: PolicyInput = { name: 'strict', burst: 1000, rate: '1000/s', failMode: 'closed' };
const open: PolicyInput = { name: 'lenient', burst: 1000, rate: '1000/s', failMode: 'open' };
const local: PolicyInput = { name: 'local', burst: 2, rate: '1/m', failMode: 'local' };

describe('a Redis that never answers', () => {
  it('closed: unavailable and denied within the deadline', async () => {
    const limiter = createLimiter({ policies: [closed], store: silentStore, breaker: false });
    const { value, ms } = await timed(() => limiter.check({ identity: 'a' }));
    expect(value).toMatchObject({
      allowed: false,
      outcome: 'unavailable',
      source: 'fail-closed',
      policy: 'strict',
    });
    expect(ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 5);
    expect(ms).toBeLessThan(TIMEOUT_MS + SLACK_MS);
  });

  it('open: unavailable but admitted within the deadline', async () => {
    const limiter = createLimiter({ policies: [open], store: silentStore, breaker: false, timeoutMs: 50 });
    const { value, ms } = await timed(() => limiter.check({ identity: 'a' }));
    expect(value).toMatchObject({ allowed: true, outcome: 'unavailable', source: 'fail-open' });
    expect(ms).toBeLessThan(50 + SLACK_MS);
  });

  it('local: decided by the in-process fallback', async () => {
    const limiter = createLimiter({ policies: [local], store: silentStore, breaker: false, timeoutMs: 50 });
    const decisions = [];
    for (let i = 0; i < 3; i++) decisions.push(await limiter.check({ identity: 'a' }));
    expect(decisions.map((d) => [d.allowed, d.outcome, d.source])).toEqual([
      [true, 'allowed', 'local'],
      [true, 'allowed', 'local'],
      [false, 'over_limit', 'local'],
    ]);
  });

  it('many concurrent checks all end unavailable within the deadline, none over_limit', async () => {
    const limiter = createLimiter({ policies: [closed, open], store: silentStore, breaker: false });
    const { value, ms } = await timed(() =>
      Promise.all(Array.from({ length: 200 }, (_, i) => limiter.check({ identity: `id-${i % 7}` }))),
    );
    expect(value.every((d) => d.outcome === 'unavailable' && !d.allowed)).toBe(true);
    expect(value.flatMap((d) => d.results).some((r) => r.outcome === 'over_limit')).toBe(false);
    expect(ms).toBeLessThan(TIMEOUT_MS + SLACK_MS);
  });

  it('the breaker opens, stops calling Redis, then closes again through a probe', async () => {
    // One client switched from the silent server to a real Redis once it "recovers".
    // It counts the calls that leave for Redis.
    let target: EvalClient = silentStore.client;
    let calls = 0;
    const switchable: EvalClient = {
      evalsha: (...args) => {
        calls++;
        return target.evalsha(...args);
      },
      eval: (...args) => {
        calls++;
        return target.eval(...args);
      },
    };
    const clock = { now: 1_800_000_000_000 };
    // The script is cached and the connection warm, so the recovery probe is one quick round trip.
    for (const script of DECIDE_SCRIPTS) await real.script('LOAD', script.source);
    const limiter = createLimiter({
      policies: [closed],
      store: createRedisStore(switchable),
      clock: () => clock.now,
      timeoutMs: BREAKER_TIMEOUT_MS,
      breaker: { failureThreshold: 3, cooldownMs: 5000 },
    });
    for (let i = 0; i < 3; i++) {
      const { value, ms } = await timed(() => limiter.check({ identity: 'b' }));
      expect(value.outcome).toBe('unavailable');
      expect(ms).toBeGreaterThanOrEqual(BREAKER_TIMEOUT_MS - 5);
    }
    expect(limiter.breakerState).toBe('open');
    expect(calls).toBe(3);

    // Open: no call reaches Redis, and nobody waits for the deadline.
    for (let i = 0; i < 20; i++) {
      const { value, ms } = await timed(() => limiter.check({ identity: 'b' }));
      expect(value).toMatchObject({ outcome: 'unavailable', source: 'fail-closed' });
      expect(ms).toBeLessThan(BREAKER_TIMEOUT_MS - 100); // no waiting for the deadline
    }
    expect(calls).toBe(3);

    // After the cool-down a probe goes out; it times out again: open for another cool-down.
    clock.now += 5000;
    expect(limiter.breakerState).toBe('half-open');
    const probe = await timed(() => limiter.check({ identity: 'b' }));
    expect(probe.ms).toBeGreaterThanOrEqual(BREAKER_TIMEOUT_MS - 5);
    expect(calls).toBe(4);
    expect(limiter.breakerState).toBe('open');

    // Redis is back: the next probe succeeds and the breaker closes.
    target = real;
    clock.now += 5000;
    const recovered = await limiter.check({ identity: 'b' });
    expect(recovered).toMatchObject({ allowed: true, outcome: 'allowed', source: 'store', remaining: 999 });
    expect(limiter.breakerState).toBe('closed');
    expect((await limiter.check({ identity: 'b' })).source).toBe('store');
    expect(calls).toBeGreaterThanOrEqual(6); // EVALSHA (+ EVAL once after NOSCRIPT) per check
  });
});
