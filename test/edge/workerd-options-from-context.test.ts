/**
 * @sluice/hono on workerd (miniflare): options built from the context's env bindings by a
 * function given to `rateLimit`, called once for the isolate however many requests arrive
 * (concurrent first requests included), its limiter shared by all of them.
 */
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningWorker, startWorker } from './workerd-harness.js';

let worker: RunningWorker;

beforeAll(async () => {
  worker = await startWorker(
    fileURLToPath(new URL('./workers/options-from-context-worker.ts', import.meta.url)),
    { API_LIMIT: '3', POLICY_NAME: 'from-env' },
  );
});

afterAll(async () => {
  await worker?.dispose();
});

const get = async (path: string, apiKey = 'tenant') => {
  const res = await worker.fetch(path, { headers: { 'x-api-key': apiKey } });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> };
};

describe('rateLimit((c) => options) on workerd', () => {
  it('builds the options from env bindings once, even for concurrent first requests', async () => {
    const first = await Promise.all([get('/api/hello', 'a'), get('/api/hello', 'b'), get('/api/hello', 'c')]);
    for (const res of first) {
      expect(res.status).toBe(200);
      // The policy's name and limit came from the bindings.
      expect(res.headers.get('ratelimit-policy')).toBe('"from-env";q=3;w=60');
    }
    expect((await get('/builds')).body).toEqual({ builds: 1 });
    // One limiter for every request: tenant a has 2 left, then is denied.
    expect((await get('/api/hello', 'a')).status).toBe(200);
    expect((await get('/api/hello', 'a')).status).toBe(200);
    const denied = await get('/api/hello', 'a');
    expect(denied.status).toBe(429);
    expect(denied.body).toMatchObject({ error: 'rate limit exceeded', policy: 'from-env' });
    expect((await get('/builds')).body).toEqual({ builds: 1 });
  });

  it('surfaces invalid options from the function on the request, as an options error', async () => {
    const res = await get('/broken/hello');
    expect(res.status).toBe(500);
    expect(res.body).toEqual({
      name: 'RateLimitOptionsError',
      error: 'rateLimit: "limit" must be a positive integer, got NaN',
    });
  });
});
