/** The README's quick start, run as written: 5 requests a minute, then 429; /health is not limited. */
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
      '@sluice/fastify': here('./index.ts'),
      '@sluice/core': here('../../core/src/index.ts'),
      '@sluice/core/adapter': here('../../core/src/adapter.ts'),
    },
  });
}, 30_000);

afterAll(async () => {
  await snippet?.stop();
});

describe('README quick start', () => {
  it('admits 5 requests per client, then answers 429 with problem+json; /health is not limited', async () => {
    for (let i = 0; i < 5; i++) {
      const reply = await request(`${snippet.url}/hello`);
      expect(reply.status).toBe(200);
      expect(json(reply)).toEqual({ hello: 'world', remaining: 4 - i });
      expect(reply.headers['ratelimit-policy']).toBe('"default";q=5;w=60');
      expect(reply.headers.ratelimit).toMatch(new RegExp(`^"default";r=${4 - i};t=\\d+$`));
    }
    const denied = await request(`${snippet.url}/hello`);
    expect(denied.status).toBe(429);
    const retryAfter = Number(denied.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(json(denied)).toEqual(EXPECTED.tooManyRequests(['default'], 'default', retryAfter));
    const health = await request(`${snippet.url}/health`);
    expect(health.status).toBe(200);
    expect(health.headers.ratelimit).toBeUndefined();
  });
});
