import { createLimiter, MemoryStore } from '@sluice/core';
import { Hono } from 'hono';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type RateLimitEnv, rateLimit } from './index.js';

afterEach(() => {
  vi.useRealTimers();
});

/** A Hono app on a Web runtime (`app.fetch`): one token, 10/s, waiting up to 1 s; the clock the fake timers move. */
function setup() {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date', 'performance'], now: 1_800_000_000_000 });
  const clock = () => Date.now();
  const limiter = createLimiter({
    policies: [{ name: 'queued', algorithm: 'token-bucket', burst: 1, rate: '10/s', maxWaitMs: 1000 }],
    store: new MemoryStore({ clock }),
    clock,
  });
  const app = new Hono<RateLimitEnv>();
  app.use('*', rateLimit({ limiter, identity: () => 'tenant' }));
  app.get('/queued', (c) => c.json({ ok: true }));
  const fetchQueued = async (signal?: AbortSignal): Promise<Response> =>
    app.fetch(new Request('http://localhost/queued', signal === undefined ? {} : { signal }));
  return { fetchQueued };
}

describe('a waiting request on a Web runtime', () => {
  it('gives its turn back when its request signal aborts: the next request gets that turn', async () => {
    const { fetchQueued } = setup();
    expect((await fetchQueued()).status).toBe(200);
    const controller = new AbortController();
    let cancelled: Response | undefined;
    void fetchQueued(controller.signal).then((response) => {
      cancelled = response;
    });
    await vi.advanceTimersByTimeAsync(10);
    expect(cancelled).toBeUndefined();
    controller.abort();
    // Answered at once, not at its turn (100 ms).
    await vi.advanceTimersByTimeAsync(0);
    expect(cancelled?.status).toBe(429);
    let next: Response | undefined;
    void fetchQueued().then((response) => {
      next = response;
    });
    // The aborted request's turn (100 ms after the first) is the next one's, 90 ms from now;
    // without the give-back it would be 190 ms.
    await vi.advanceTimersByTimeAsync(89);
    expect(next).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(next?.status).toBe(200);
  });
});
