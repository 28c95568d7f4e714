/**
 * docs/migrating.md, run as written: the Sluice snippet of every section (the last ts block
 * of each), bundled from source and started in a child process, against a real redis-server
 * and a Redis-over-HTTP server where the snippet uses them. Each admits 5 requests a minute
 * per client and answers the 6th with 429 and Retry-After.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { EXPECTED, json, request } from '../support/adapter-client.js';
import { type RunningSnippet, runSnippet } from '../support/readme-snippet.js';
import { type RedisProcess, startRedis } from '../support/redis-server.js';
import { type RestRedisServer, startRestRedisServer } from '../support/rest-redis-server.js';

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));
const docs = readFileSync(here('../../docs/migrating.md'), 'utf8');

/** The last ```ts block of every `## ` section, by heading. */
function sluiceSnippets(markdown: string): Map<string, string> {
  const snippets = new Map<string, string>();
  for (const section of markdown.split('\n## ').slice(1)) {
    const heading = section.slice(0, section.indexOf('\n')).trim();
    const blocks = [...section.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1] as string);
    if (blocks.length > 0) snippets.set(heading, blocks.at(-1) as string);
  }
  return snippets;
}

const ALIASES = {
  '@sluice/core/node': here('../../packages/core/src/node/index.ts'),
  '@sluice/core/adapter': here('../../packages/core/src/adapter.ts'),
  '@sluice/core': here('../../packages/core/src/index.ts'),
  '@sluice/express': here('../../packages/express/src/index.ts'),
  '@sluice/koa': here('../../packages/koa/src/index.ts'),
  '@sluice/hono': here('../../packages/hono/src/index.ts'),
  '@sluice/fastify': here('../../packages/fastify/src/index.ts'),
  '@sluice/nestjs': here('../../packages/nestjs/src/index.ts'),
};

/** Libraries whose Sluice snippet answers the default problem+json 429. */
const PROBLEM_BODY = [
  'express-rate-limit',
  '@nestjs/throttler',
  'koa-ratelimit',
  'hono-rate-limiter',
  '@fastify/rate-limit',
  'rate-limiter-flexible',
];
const LIBRARIES = [...PROBLEM_BODY, '@upstash/ratelimit'];

let redis: RedisProcess;
let rest: RestRedisServer;
let admin: Redis;
const snippets = sluiceSnippets(docs);

beforeAll(async () => {
  redis = await startRedis();
  rest = await startRestRedisServer({ redisUrl: redis.url, token: 'migrating-token' });
  admin = new Redis(redis.port, '127.0.0.1');
  process.env.REDIS_URL = redis.url;
  process.env.UPSTASH_REDIS_REST_URL = rest.url;
  process.env.UPSTASH_REDIS_REST_TOKEN = rest.token;
}, 60_000);

// The snippets share one Redis and key by the same client address: each starts from nothing.
beforeEach(async () => {
  await admin?.flushall();
});

afterAll(async () => {
  admin?.disconnect();
  delete process.env.REDIS_URL;
  delete process.env.UPSTASH_REDIS_REST_URL;
  delete process.env.UPSTASH_REDIS_REST_TOKEN;
  await rest?.stop();
  await redis?.stop();
});

describe('docs/migrating.md', () => {
  it('has a Sluice snippet for every library it names', () => {
    expect([...snippets.keys()]).toEqual(LIBRARIES);
  });

  for (const library of LIBRARIES) {
    it(`${library}: the Sluice snippet admits 5 a minute, then answers 429`, async () => {
      const source = snippets.get(library);
      expect(source).toBeDefined();
      let snippet: RunningSnippet | undefined;
      try {
        snippet = await runSnippet(source as string, {
          outDir: here(`../node_modules/.cache/migrating/${library.replace(/[@/]/g, '_')}`),
          aliases: ALIASES,
          timeoutMs: 45_000,
        });
        for (let i = 0; i < 5; i++) {
          const reply = await request(`${snippet.url}/`);
          expect(reply.status, `request ${i + 1}: ${reply.text}`).toBe(200);
        }
        const denied = await request(`${snippet.url}/`);
        expect(denied.status).toBe(429);
        const retryAfter = Number(denied.headers['retry-after']);
        expect(retryAfter).toBeGreaterThanOrEqual(1);
        expect(retryAfter).toBeLessThanOrEqual(60);
        if (PROBLEM_BODY.includes(library)) {
          expect(json(denied)).toEqual(
            EXPECTED.tooManyRequests([expect.any(String)], expect.any(String), retryAfter),
          );
        } else {
          expect(json(denied)).toEqual({ error: 'rate limit exceeded' });
        }
      } finally {
        await snippet?.stop();
      }
    }, 90_000);
  }
});
