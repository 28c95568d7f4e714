/** The README's quick start, run as written: 5 requests a minute on /hello, 3 on transfers, /health free. */
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXPECTED, json, request } from '../../../test/support/adapter-client.js';
import {
  codeBlockAfter,
  type RunningSnippet,
  readText,
  runSnippet,
} from '../../../test/support/readme-snippet.js';

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));
let snippet: RunningSnippet;

beforeAll(async () => {
  const source = codeBlockAfter(readText(new URL('../README.md', import.meta.url)), '## Quick start');
  snippet = await runSnippet(source, {
    outDir: here('../node_modules/.cache/readme-test'),
    aliases: {
      '@sluice/nestjs': here('./index.ts'),
      '@sluice/core': here('../../core/src/index.ts'),
      '@sluice/core/adapter': here('../../core/src/adapter.ts'),
    },
    timeoutMs: 45_000,
  });
}, 60_000);

afterAll(async () => {
  await snippet?.stop();
});

describe('README quick start', () => {
  it('limits GET /hello to 5 and POST /transfers/:id to 3 per client; /health is free', async () => {
    for (let i = 0; i < 5; i++) {
      const reply = await request(`${snippet.url}/hello`);
      expect(reply.status).toBe(200);
      expect(json(reply)).toEqual({ hello: 'world' });
      expect(reply.headers['ratelimit-policy']).toBe('"api";q=5;w=60');
      expect(reply.headers.ratelimit).toMatch(new RegExp(`^"api";r=${4 - i};t=\\d+$`));
    }
    const denied = await request(`${snippet.url}/hello`);
    expect(denied.status).toBe(429);
    const retryAfter = Number(denied.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(json(denied)).toEqual(EXPECTED.tooManyRequests(['api'], 'api', retryAfter));

    for (let i = 0; i < 3; i++) {
      const transfer = await request(`${snippet.url}/transfers/${i}`, { method: 'POST' });
      expect(transfer.status).toBe(201);
      expect(transfer.headers['ratelimit-policy']).toBe('"transfers";q=3;w=60');
    }
    expect((await request(`${snippet.url}/transfers/9`, { method: 'POST' })).status).toBe(429);

    const health = await request(`${snippet.url}/health`);
    expect(health.status).toBe(200);
    expect(health.headers.ratelimit).toBeUndefined();
  });
});
