/**
 * Concurrency slots on runtimes without a Node response (`app.fetch`): a slot is released on every
 * way a Web response can end: its body read to the end, cancelled, dropped unread by a HEAD request,
 * or never read at all (one slot lease after the handler finished, as a dead instance's slots).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { createLimiter, MemoryStore } from '@sluice/core';
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { type RateLimitEnv, rateLimit } from './index.js';

/** Limit 3 in flight, a slot lease of `leaseMs`; `GET /work` answers a JSON body. */
function setup(leaseMs = 10_000) {
  const limiter = createLimiter({
    policies: [{ name: 'in-flight', algorithm: 'concurrency', limit: 3, leaseMs }],
    store: new MemoryStore(),
    denyCache: false,
  });
  const app = new Hono<RateLimitEnv>();
  app.use('*', rateLimit({ limiter, identity: () => 'tenant' }));
  app.get('/work', (c) => c.json({ ok: true }));
  const fetch = (method = 'GET') => app.fetch(new Request('http://localhost/work', { method }));
  return { fetch, limiter };
}

describe('@sluice/hono on app.fetch: a concurrency slot is released however the response ends', () => {
  it('HEAD requests (the body dropped unread) release their slots: a 4th request is admitted', async () => {
    const { fetch } = setup();
    for (let i = 0; i < 3; i++) expect((await fetch('HEAD')).status).toBe(200);
    await sleep(10);
    expect((await fetch('HEAD')).status).toBe(200);
    const again = await Promise.all([fetch(), fetch(), fetch()]);
    expect(again.map((r) => r.status)).toEqual([200, 200, 200]);
    await Promise.all(again.map((r) => r.text()));
  });

  it('bodies read to the end or cancelled release at once', async () => {
    const { fetch } = setup();
    const first = await Promise.all([fetch(), fetch(), fetch()]);
    expect((await fetch()).status).toBe(429);
    await first[0]!.text();
    await first[1]!.body!.cancel();
    await sleep(10);
    expect((await Promise.all([fetch(), fetch()])).map((r) => r.status)).toEqual([200, 200]);
  });

  it('bodies nobody reads release one slot lease after the handler finished, not never', async () => {
    const { fetch } = setup(200);
    const unread = await Promise.all([fetch(), fetch(), fetch()]);
    expect(unread.map((r) => r.status)).toEqual([200, 200, 200]);
    // Still held within the lease (renewed as any held slot is) ...
    expect((await fetch()).status).toBe(429);
    // ... and released once it ran out.
    await sleep(350);
    const after = await fetch();
    expect(after.status).toBe(200);
    await after.text();
  });
});
