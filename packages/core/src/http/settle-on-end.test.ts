/**
 * `settleOnResponseEnd` on a real Node server: when the response finishes, and at once for a response whose connection had already closed when it
 * was called (a client gone while its check was with the store: its slot must not wait for a lease).
 */
import { createServer, request, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import type { ResponseFacts } from './settle-request.js';
import { settleOnResponseEnd } from './settle-request.js';

/** A server whose handler hands its response to `onResponse`; a client that may hang up at once. */
async function serve(onResponse: (res: ServerResponse) => void, hangUp: boolean): Promise<void> {
  const server = createServer((req, res) => {
    if (!hangUp) return onResponse(res);
    // Like a check still with the store when the client goes away: called after the close.
    req.socket.once('close', () => setImmediate(() => onResponse(res)));
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((done) => {
    const req = request({ port, host: '127.0.0.1', path: '/' }, (res) => {
      res.resume();
      res.on('end', done);
    });
    req.on('error', () => done());
    req.end();
    if (hangUp) setTimeout(() => req.destroy(), 20);
  });
  await new Promise((done) => setTimeout(done, 50));
  server.closeAllConnections();
  await new Promise((done) => server.close(done));
}

describe('settleOnResponseEnd', () => {
  it('settles, completed, when the response finishes (first on finish; the settler ignores the close after)', async () => {
    const seen: ResponseFacts[] = [];
    await serve((res) => {
      settleOnResponseEnd(res, async (facts) => void seen.push(facts));
      res.end('ok');
    }, false);
    expect(seen[0]).toEqual({ statusCode: 200, completed: true });
  });

  it('settles at once, not completed, for a response whose client had gone already', async () => {
    const seen: ResponseFacts[] = [];
    await serve((res) => settleOnResponseEnd(res, async (facts) => void seen.push(facts)), true);
    expect(seen).toEqual([{ statusCode: 200, completed: false }]);
  });
});
