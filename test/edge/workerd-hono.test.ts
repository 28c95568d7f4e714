/**
 * The Cloudflare Worker from docs/edge.md, exactly as written there: bundled with esbuild,
 * run in workerd through miniflare, limiting with @sluice/hono and a RedisStore over the
 * Upstash REST protocol against a real redis-server. 200s, then 429 with the right headers
 * and problem+json body; identities are limited separately; nothing internal leaks.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisProcess, startRedis } from '../support/redis-server.js';
import { type RestRedisServer, startRestRedisServer } from '../support/rest-redis-server.js';
import { codeBlock, type RunningWorker, startWorker } from './workerd-harness.js';

const docs = readFileSync(fileURLToPath(new URL('../../docs/edge.md', import.meta.url)), 'utf8');
const workerSource = codeBlock(docs, 'export default app');
const LIMIT = 5;

let redis: RedisProcess;
let rest: RestRedisServer;
let worker: RunningWorker;

beforeAll(async () => {
  redis = await startRedis();
  rest = await startRestRedisServer({ redisUrl: redis.url, token: 'hono-edge-token' });
  worker = await startWorker(
    { contents: workerSource, resolveDir: fileURLToPath(new URL('./workers/', import.meta.url)) },
    { UPSTASH_REDIS_REST_URL: rest.url, UPSTASH_REDIS_REST_TOKEN: rest.token },
  );
});

afterAll(async () => {
  await worker?.dispose();
  await rest?.stop();
  await redis?.stop();
});

async function get(path: string, apiKey: string) {
  const res = await worker.fetch(path, { headers: { 'x-api-key': apiKey } });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

describe('docs/edge.md worker in workerd (miniflare) with @sluice/hono over Redis REST', () => {
  it('answers 200 for the first 5 requests, then 429 with RateLimit headers, Retry-After and problem+json', async () => {
    const apiKey = 'tenant-sequence';
    const responses = [];
    for (let i = 0; i < LIMIT + 2; i++) responses.push(await get('/api/hello', apiKey));

    for (const [i, res] of responses.slice(0, LIMIT).entries()) {
      expect(res.status, `request ${i + 1}`).toBe(200);
      expect(JSON.parse(res.text)).toEqual({ ok: true });
      expect(res.headers.get('ratelimit-policy')).toBe('"api";q=5;w=60');
      expect(res.headers.get('ratelimit')).toMatch(new RegExp(`^"api";r=${LIMIT - 1 - i};t=\\d+$`));
      expect(res.headers.get('retry-after')).toBeNull();
    }
    for (const res of responses.slice(LIMIT)) {
      expect(res.status).toBe(429);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(res.headers.get('ratelimit-policy')).toBe('"api";q=5;w=60');
      expect(res.headers.get('ratelimit')).toMatch(/^"api";r=0;t=\d+$/);
      const retryAfter = Number(res.headers.get('retry-after'));
      expect(Number.isInteger(retryAfter)).toBe(true);
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
      const body = JSON.parse(res.text) as Record<string, unknown>;
      expect(body).toMatchObject({
        status: 429,
        error: 'rate limit exceeded',
        policy: 'api',
        retry_after_seconds: retryAfter,
        'violated-policies': ['api'],
      });
      expect(typeof body.type).toBe('string');
      expect(typeof body.title).toBe('string');
      expect(res.text).not.toContain(apiKey);
      expect(res.text).not.toContain('sluice:');
      expect(res.text).not.toContain(rest.token);
    }
  });

  it('limits each identity separately and leaves unmatched routes alone', async () => {
    for (let i = 0; i < LIMIT; i++) expect((await get('/api/hello', 'tenant-other')).status).toBe(200);
    expect((await get('/api/hello', 'tenant-other')).status).toBe(429);
    expect((await get('/api/hello', 'tenant-fresh')).status).toBe(200);
    expect((await get('/not-limited', 'tenant-other')).status).toBe(404);
  });

  it('holds the limit under concurrent requests in one isolate (exactly 5 of 8 admitted)', async () => {
    const responses = await Promise.all(
      Array.from({ length: LIMIT + 3 }, () => get('/api/hello', 'tenant-concurrent')),
    );
    const statuses = responses.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429, 429]);
  });

  it('decided in Redis over REST: EVALSHA, one EVAL to load the script, nothing else', () => {
    // A fresh Redis: the first EVALSHA meets NOSCRIPT and RedisStore loads the script with EVAL.
    expect(rest.commands.slice(0, 3)).toEqual(['EVALSHA', 'EVAL', 'EVALSHA']);
    expect(rest.commands.filter((c) => c === 'EVAL')).toHaveLength(1);
    expect(rest.commands.every((c) => c === 'EVALSHA' || c === 'EVAL')).toBe(true);
    // Every admitted request and the first denial of each of the three limited identities were
    // decided by Redis, plus the fresh identity (later denials may come from the deny cache).
    const decisionsInRedis = rest.commands.length - 1;
    expect(decisionsInRedis).toBeGreaterThanOrEqual(3 * (LIMIT + 1) + 1);
  });

  it('bundles with no Node built-in', () => {
    expect(worker.code).not.toMatch(/from\s*["']node:/);
    expect(worker.code).toContain('createRestEvalClient');
  });
});
