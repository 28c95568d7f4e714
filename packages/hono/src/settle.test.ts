import { createLimiter, MemoryStore } from '@sluice/core';
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { type RateLimitEnv, rateLimit } from './index.js';

/** A limiter on a frozen clock: one fixed window of 10 units per minute. */
function setup() {
  const now = 1_800_000_000_000;
  const clock = () => now;
  const limiter = createLimiter({
    policies: [{ name: 'api', algorithm: 'fixed-window', limit: 10, window: '1m' }],
    store: new MemoryStore({ clock }),
    clock,
  });
  const seen: { statusCode: number; completed: boolean }[] = [];
  const app = new Hono<RateLimitEnv>();
  app.use(
    '*',
    rateLimit({
      limiter,
      identity: () => 'tenant',
      cost: 5,
      settle: (_c, response) => {
        seen.push(response);
        return 1;
      },
    }),
  );
  app.get('/stream', () => {
    const chunks = ['a', 'b', 'c'];
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        const next = chunks.shift();
        if (next === undefined) controller.close();
        else controller.enqueue(new TextEncoder().encode(next));
      },
    });
    return new Response(body, { status: 200 });
  });
  const remaining = async () => (await limiter.peek({ identity: 'tenant' })).remaining;
  return { app, seen, remaining };
}

describe('settle on runtimes without a Node response (app.request)', () => {
  it('settles once the body was read to the end, not before', async () => {
    const { app, seen, remaining } = setup();
    const response = await app.request('/stream');
    expect(response.status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 10));
    // Reserved, not settled yet: the body is still unread.
    expect(seen).toEqual([]);
    expect(await remaining()).toBe(5);
    expect(await response.text()).toBe('abc');
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(seen).toEqual([{ statusCode: 200, completed: true }]);
    expect(await remaining()).toBe(9);
  });

  it('settles a response whose body the client cancelled as not completed', async () => {
    const { app, seen, remaining } = setup();
    const response = await app.request('/stream');
    await response.body?.cancel();
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(seen).toEqual([{ statusCode: 200, completed: false }]);
    expect(await remaining()).toBe(9);
  });
});
