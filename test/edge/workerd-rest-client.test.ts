/**
 * The REST EvalClient inside workerd (miniflare): a bundled worker reaches a real Redis over
 * HTTP through the REST test server, with the EVALSHA -> EVAL fallback after SCRIPT FLUSH.
 */
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisProcess, startRedis } from '../support/redis-server.js';
import { type RestRedisServer, startRestRedisServer } from '../support/rest-redis-server.js';
import { type RunningWorker, startWorker } from './workerd-harness.js';

const entry = fileURLToPath(new URL('./workers/rest-client-worker.ts', import.meta.url));

let redis: RedisProcess;
let rest: RestRedisServer;
let worker: RunningWorker;

beforeAll(async () => {
  redis = await startRedis();
  rest = await startRestRedisServer({ redisUrl: redis.url, token: 'workerd-token' });
  worker = await startWorker(entry, { REST_URL: rest.url, REST_TOKEN: rest.token });
});

afterAll(async () => {
  await worker?.dispose();
  await rest?.stop();
  await redis?.stop();
});

async function hit(key: string): Promise<{ count: number; fellBack: boolean; runtime: string }> {
  const res = await worker.fetch(`/?key=${key}`);
  expect(res.status).toBe(200);
  return (await res.json()) as { count: number; fellBack: boolean; runtime: string };
}

async function scriptFlush(): Promise<void> {
  const res = await fetch(rest.url, {
    method: 'POST',
    headers: { Authorization: `Bearer ${rest.token}` },
    body: JSON.stringify(['SCRIPT', 'FLUSH']),
  });
  expect(await res.json()).toEqual({ result: 'OK' });
}

describe('REST EvalClient in workerd', () => {
  it('runs in workerd, not Node', async () => {
    const { runtime } = await hit('runtime');
    expect(runtime).toBe('Cloudflare-Workers');
  });

  it('counts through EVALSHA, loading the script with EVAL when missing and again after SCRIPT FLUSH', async () => {
    await scriptFlush();
    rest.commands.length = 0;
    const results = [await hit('a'), await hit('a'), await hit('a')];
    expect(results.map((r) => r.count)).toEqual([1, 2, 3]);
    expect(results.map((r) => r.fellBack)).toEqual([true, false, false]);
    expect(rest.commands).toEqual(['EVALSHA', 'EVAL', 'EVALSHA', 'EVALSHA']);

    await scriptFlush();
    rest.commands.length = 0;
    expect(await hit('a')).toMatchObject({ count: 4, fellBack: true });
    expect(await hit('a')).toMatchObject({ count: 5, fellBack: false });
    expect(rest.commands).toEqual(['EVALSHA', 'EVAL', 'EVALSHA']);
  });

  it('the bundle holds no Node built-in import', () => {
    expect(worker.code).not.toMatch(/from\s*["']node:/);
  });
});
