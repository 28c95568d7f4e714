/**
 * Test worker: @sluice/hono's options built from the request context (`c.env` bindings) by
 * an async function, once per isolate. `/builds` reports how many times it ran.
 */
import { MemoryStore } from '@sluice/core';
import { rateLimit } from '@sluice/hono';
import { Hono } from 'hono';

type Bindings = { API_LIMIT: string; POLICY_NAME: string };

let builds = 0;
const app = new Hono<{ Bindings: Bindings }>();

app.use(
  '/api/*',
  rateLimit<{ Bindings: Bindings }>(async (c) => {
    builds++;
    await Promise.resolve(); // an async factory (a secret fetched, a client connected)
    return {
      policies: [
        { name: c.env.POLICY_NAME, algorithm: 'fixed-window', limit: Number(c.env.API_LIMIT), window: '1m' },
      ],
      store: new MemoryStore(),
      identityHeader: 'x-api-key',
    };
  }),
);
app.use(
  '/broken/*',
  rateLimit<{ Bindings: Bindings }>((c) => ({
    limit: Number(c.env.POLICY_NAME),
    window: '1m',
    identityHeader: 'x',
  })),
);
app.onError((error, c) => c.json({ error: error.message, name: error.name }, 500));
app.get('/api/hello', (c) => c.json({ ok: true }));
app.get('/broken/hello', (c) => c.json({ ok: true }));
app.get('/builds', (c) => c.json({ builds }));

export default app;
