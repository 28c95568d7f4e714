/**
 * docs/after-the-response.md, run as written: every ```ts block, bundled from source and
 * started in a child process, driven over HTTP on 127.0.0.1. Each scenario would fail without
 * the settle: the login limit would count successes, the token budget would deny the fifth
 * reservation, the quote limit would count the upstream's failures.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { json, readReply, request } from '../support/adapter-client.js';
import { type RunningSnippet, runSnippet } from '../support/readme-snippet.js';

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));
const docs = readFileSync(here('../../docs/after-the-response.md'), 'utf8');

/** The ```ts block of every `## ` section, by heading. */
function snippets(markdown: string): Map<string, string> {
  const found = new Map<string, string>();
  for (const section of markdown.split('\n## ').slice(1)) {
    const heading = section.slice(0, section.indexOf('\n')).trim();
    const blocks = [...section.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1] as string);
    expect(blocks.length, heading).toBeLessThanOrEqual(1);
    if (blocks.length === 1) found.set(heading, blocks[0] as string);
  }
  return found;
}

const ALIASES = {
  '@sluice/core/node': here('../../packages/core/src/node/index.ts'),
  '@sluice/core/adapter': here('../../packages/core/src/adapter.ts'),
  '@sluice/core': here('../../packages/core/src/index.ts'),
  '@sluice/express': here('../../packages/express/src/index.ts'),
  '@sluice/koa': here('../../packages/koa/src/index.ts'),
  '@sluice/hono': here('../../packages/hono/src/index.ts'),
  '@sluice/nestjs': here('../../packages/nestjs/src/index.ts'),
};

const programs = snippets(docs);

/**
 * A settle runs once the server has finished the response, which can be just after the client
 * read it: give it a moment before the next request, as a client that reads its answer does.
 */
const settled = () => new Promise((resolve) => setTimeout(resolve, 25));
let running: RunningSnippet | undefined;

async function start(heading: string): Promise<string> {
  const source = programs.get(heading);
  if (source === undefined) throw new Error(`docs/after-the-response.md has no snippet under "${heading}"`);
  running = await runSnippet(source, {
    outDir: here(`../node_modules/.cache/after-the-response/${heading.replace(/\W+/g, '_')}`),
    aliases: ALIASES,
    timeoutMs: 45_000,
  });
  return running.url;
}

afterEach(async () => {
  await running?.stop();
  running = undefined;
});

describe('docs/after-the-response.md', () => {
  it('has a program for each use it describes', () => {
    expect([...programs.keys()]).toEqual([
      'Login brute-force protection',
      'LLM token budgets',
      'Refunds for failed upstream calls',
    ]);
  });

  it('login: successes are not counted; the sixth failure is answered 429', async () => {
    const url = await start('Login brute-force protection');
    const login = (password: string) =>
      request(`${url}/login?password=${encodeURIComponent(password)}`, { method: 'POST' });
    for (let i = 0; i < 8; i++) {
      expect((await login('correct horse')).status, `success ${i + 1}`).toBe(200);
      await settled();
    }
    for (let i = 0; i < 5; i++) expect((await login('guess')).status, `failure ${i + 1}`).toBe(401);
    const denied = await login('guess');
    expect(denied.status).toBe(429);
    expect(Number(denied.headers['retry-after'])).toBeGreaterThan(0);
    // The window is used up by failures: a right password now waits as well.
    expect((await login('correct horse')).status).toBe(429);
  }, 90_000);

  it('token budget: reservations of 500 are settled to the usage, so short completions go on', async () => {
    const url = await start('LLM token budgets');
    const complete = async (prompt: string) =>
      readReply(await fetch(`${url}/complete`, { method: 'POST', body: prompt }));
    // 2000 tokens reserve 500 four times; settled to 20 each, twenty in a row pass.
    for (let i = 0; i < 20; i++) {
      const reply = await complete('0123456789');
      expect(reply.status, `completion ${i + 1}: ${reply.text}`).toBe(200);
      expect(json(reply)).toEqual({ tokensUsed: 20 });
      await settled();
    }
    // Completions that use all 500 they reserve run the budget out within a few requests.
    let admitted = 0;
    for (;;) {
      const reply = await complete('x'.repeat(600));
      if (reply.status === 429) break;
      expect(reply.status).toBe(200);
      admitted++;
      expect(admitted).toBeLessThanOrEqual(4);
    }
    expect(admitted).toBeGreaterThanOrEqual(2);
  }, 90_000);

  it('quotes: calls the upstream failed are given back; ten good ones a minute, then 429', async () => {
    const url = await start('Refunds for failed upstream calls');
    for (let i = 0; i < 15; i++) {
      expect((await request(`${url}/quote?upstream=down`)).status, `failed call ${i + 1}`).toBe(502);
      await settled();
    }
    for (let i = 0; i < 10; i++) {
      const reply = await request(`${url}/quote`);
      expect(reply.status, `quote ${i + 1}`).toBe(200);
      expect(json(reply)).toEqual({ price: 42 });
    }
    expect((await request(`${url}/quote`)).status).toBe(429);
  }, 90_000);
});
