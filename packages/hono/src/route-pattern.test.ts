/** `matchedPattern`: the pattern of the route that answers, read from Hono's match result. */
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { matchedPattern } from './route-pattern.js';

/** An app whose wildcard middleware records what `matchedPattern` sees, per request. */
function recordingApp() {
  const seen: (string | undefined)[] = [];
  const app = new Hono();
  app.use('*', async (c, next) => {
    seen.push(matchedPattern(c));
    await next();
  });
  return { app, seen };
}

describe('matchedPattern', () => {
  it('gives the answering route from app-wide middleware, per method', async () => {
    const { app, seen } = recordingApp();
    app.get('/items/:id', (c) => c.text('get'));
    app.post('/items/:id', (c) => c.text('post'));
    await app.request('/items/1');
    await app.request('/items/2', { method: 'POST' });
    expect(seen).toEqual(['/items/:id', '/items/:id']);
  });

  it('includes the base path of mounted sub-apps', async () => {
    const { app, seen } = recordingApp();
    const api = new Hono();
    api.get('/users/:userId/orders/:orderId', (c) => c.text('ok'));
    app.route('/api/v1', api);
    await app.request('/api/v1/users/7/orders/9');
    expect(seen).toEqual(['/api/v1/users/:userId/orders/:orderId']);
  });

  it("takes an app.all() route's own path, and undefined when only wildcards matched", async () => {
    const { app, seen } = recordingApp();
    app.all('/any', (c) => c.text('any'));
    await app.request('/any', { method: 'DELETE' });
    await app.request('/nothing/here');
    expect(seen).toEqual(['/any', undefined]);
  });

  it('skips later wildcard middleware and routes registered for other paths', async () => {
    const { app, seen } = recordingApp();
    app.use('/items/*', async (_c, next) => next());
    app.get('/items/:id', (c) => c.text('item'));
    app.get('/items/special', (c) => c.text('special'));
    await app.request('/items/special');
    expect(seen).toEqual(['/items/:id']); // the first concrete route answers in Hono, and is used
  });
});
