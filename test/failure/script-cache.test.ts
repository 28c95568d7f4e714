/**
 * The script cache goes away under load: SCRIPT FLUSH, and a Redis restart (same port, empty
 * cache). EVALSHA meets NOSCRIPT, the store answers with EVAL and carries on: no client sees an
 * error beyond the checks in flight at the moment Redis went down.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLimiter, type Decision, type EvalClient, RedisStore } from '../cluster/core.js';
import { type RedisProcess, startRedis } from '../support/redis-server.js';

let redis: RedisProcess;
let port: number;

beforeAll(async () => {
  redis = await startRedis();
  port = redis.port;
});
afterAll(async () => {
  await redis?.stop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Run {
  readonly startedMs: number;
  readonly endedMs: number;
  readonly decision: Decision;
}

/** `workers` loops of back-to-back checks until `stop()`; each check is timed. */
function load(limiter: ReturnType<typeof createLimiter>, workers: number) {
  const runs: Run[] = [];
  let stopped = false;
  const t0 = performance.now();
  const loops = Array.from({ length: workers }, async (_, w) => {
    for (let i = 0; !stopped && i < 100_000; i++) {
      const startedMs = performance.now() - t0;
      const decision = await limiter.check({ identity: `tenant-${w % 4}` });
      runs.push({ startedMs, endedMs: performance.now() - t0, decision });
      await sleep(2);
    }
  });
  return {
    runs,
    now: () => performance.now() - t0,
    async stop() {
      stopped = true;
      await Promise.all(loops);
      return runs;
    },
  };
}

function instrumented(client: Redis) {
  const seen = { evalsha: 0, eval: 0, noscript: 0, otherErrors: [] as string[] };
  const note = (error: unknown) => {
    const message = error instanceof Error ? error.message : String(error);
    if (message.includes('NOSCRIPT')) seen.noscript++;
    else seen.otherErrors.push(message);
    throw error;
  };
  const evalClient: EvalClient = {
    evalsha: (...args) => {
      seen.evalsha++;
      return client.evalsha(...args).catch(note);
    },
    eval: (...args) => {
      seen.eval++;
      return client.eval(...args).catch(note);
    },
  };
  return { evalClient, seen };
}

describe('an empty script cache under load', () => {
  it('SCRIPT FLUSH: every check still decided by the store, NOSCRIPT answered by EVAL', async () => {
    const client = new Redis({ host: '127.0.0.1', port });
    const admin = new Redis({ host: '127.0.0.1', port });
    const { evalClient, seen } = instrumented(client);
    const limiter = createLimiter({
      policies: [{ name: 'sf', limit: 1_000_000, window: '1m' }],
      prefix: 'sf',
      store: new RedisStore({ client: evalClient }),
      // generous: this test is about NOSCRIPT, not latency on a busy machine
      timeoutMs: 2000,
    });
    const running = load(limiter, 8);
    await sleep(300);
    for (let i = 0; i < 3; i++) {
      expect(await admin.script('FLUSH')).toBe('OK');
      await sleep(200);
    }
    const runs = await running.stop();
    console.log(
      `[failure] SCRIPT FLUSH x3 under load: ${runs.length} checks, ${seen.noscript} NOSCRIPT answered by EVAL, ${runs.filter((r) => r.decision.source !== 'store').length} not decided by the store`,
    );
    expect(runs.length).toBeGreaterThan(100);
    expect(seen.noscript).toBeGreaterThanOrEqual(3);
    expect(seen.eval).toBeGreaterThanOrEqual(seen.noscript);
    expect(seen.otherErrors).toEqual([]);
    expect(runs.filter((r) => r.decision.source !== 'store')).toEqual([]);
    client.disconnect();
    admin.disconnect();
  });

  it('Redis restarted on the same port: only checks in flight while it was down fail; afterwards all decide', async () => {
    const client = new Redis({ host: '127.0.0.1', port });
    client.on('error', () => {});
    const { evalClient, seen } = instrumented(client);
    const limiter = createLimiter({
      policies: [{ name: 'rs', limit: 1_000_000, window: '1m' }],
      prefix: 'rs',
      store: new RedisStore({ client: evalClient }),
      timeoutMs: 2000,
      breaker: false,
    });
    const running = load(limiter, 8);
    await sleep(300);
    const downAt = running.now();
    await redis.stop();
    redis = await startRedis({ port });
    const upAt = running.now();
    // Prove the new server really starts with an empty cache.
    const probe = new Redis({ host: '127.0.0.1', port });
    const exists = (await probe.script('EXISTS', '0000000000000000000000000000000000000000')) as number[];
    expect(exists).toEqual([0]);
    probe.disconnect();
    await sleep(1500);
    const runs = await running.stop();

    const failed = runs.filter((r) => r.decision.source !== 'store');
    // A failed check overlapped the downtime (it started before Redis was back up).
    for (const r of failed) expect(r.startedMs).toBeLessThanOrEqual(upAt + 50);
    // Checks that started once the restarted Redis answered again all succeeded, via EVAL after NOSCRIPT.
    const afterRecovery = runs.filter((r) => r.startedMs > upAt + 1000);
    expect(afterRecovery.length).toBeGreaterThan(20);
    expect(afterRecovery.every((r) => r.decision.source === 'store')).toBe(true);
    expect(seen.noscript).toBeGreaterThanOrEqual(1);
    // At most the 8 workers' checks in flight at the restart, plus one per worker while it was down.
    expect(failed.length).toBeLessThanOrEqual(16);
    console.log(
      `[failure] Redis restart under load: down ${(upAt - downAt).toFixed(0)} ms, ${runs.length} checks, ${failed.length} unavailable (in flight while down), ${seen.noscript} NOSCRIPT answered by EVAL`,
    );
    client.disconnect();
  });
});
