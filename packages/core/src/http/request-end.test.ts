/**
 * `settleOnResponseEnd` and `settledAsGone` on a real Node server: a request is settled (its slots
 * freed) once its handler is done and its response ended, never when the client hangs up while the
 * handler still runs; a client gone before the check answered is settled at once.
 */
import { createServer, request, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import type { ResponseFacts } from '../model/response-facts.js';
import { type RequestSettle, settledAsGone, settleOnResponseEnd } from './request-end.js';

/** A settle that records what it was called with, holding slots of `slotLeaseMs` (undefined: none). */
function recorder(slotLeaseMs: number | undefined) {
  const seen: { facts: ResponseFacts; atMs: number }[] = [];
  const t0 = performance.now();
  const settle: RequestSettle = Object.assign(
    async (facts: ResponseFacts) => void seen.push({ facts, atMs: performance.now() - t0 }),
    { slotLeaseMs },
  );
  return { seen, settle, facts: () => seen.map((s) => s.facts) };
}

/**
 * A server whose handler hands its response to `onResponse`; the client hangs up `hangUpMs` after
 * sending (undefined: reads the response). Resolves once the client is done and `afterMs` passed.
 */
async function serve(
  onResponse: (res: ServerResponse) => void,
  hangUpMs: number | undefined,
  afterMs = 50,
): Promise<void> {
  const server = createServer((_req, res) => onResponse(res));
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((done) => {
    const req = request({ port, host: '127.0.0.1', path: '/' }, (res) => {
      res.resume();
      res.on('end', done);
    });
    req.on('error', () => done());
    req.end();
    if (hangUpMs !== undefined) setTimeout(() => req.destroy(), hangUpMs);
  });
  await sleep(afterMs);
  server.closeAllConnections();
  await new Promise((done) => server.close(done));
}

describe('settleOnResponseEnd', () => {
  it('settles, completed, when the response finishes (first on finish; the settler ignores the close after)', async () => {
    const { settle, facts } = recorder(10_000);
    await serve((res) => {
      settleOnResponseEnd(res, settle);
      res.end('ok');
    }, undefined);
    expect(facts()).toEqual([{ statusCode: 200, completed: true }]);
  });

  it('a client that hangs up mid-handler: settled when the handler ends the response, not at the hang-up', async () => {
    const { settle, seen, facts } = recorder(10_000);
    await serve(
      (res) => {
        settleOnResponseEnd(res, settle);
        setTimeout(() => res.end('late'), 300);
      },
      20,
      400,
    );
    expect(facts()).toEqual([{ statusCode: 200, completed: false }]);
    expect(seen[0]!.atMs).toBeGreaterThanOrEqual(290);
  });

  it("with the framework's signal that the handler finished: settled at the later of that and the close", async () => {
    const { settle, seen, facts } = recorder(10_000);
    await serve(
      (res) => {
        settleOnResponseEnd(res, settle, sleep(300));
      },
      20,
      400,
    );
    expect(facts()).toEqual([{ statusCode: 200, completed: false }]);
    expect(seen[0]!.atMs).toBeGreaterThanOrEqual(290);
  });

  it('a handler that never ends the response after its client left: settled one slot lease after the hang-up', async () => {
    const { settle, seen, facts } = recorder(200);
    await serve((res) => settleOnResponseEnd(res, settle), 20, 400);
    expect(facts()).toEqual([{ statusCode: 200, completed: false }]);
    expect(seen[0]!.atMs).toBeGreaterThanOrEqual(200);
    expect(seen[0]!.atMs).toBeLessThan(400);
  });
});

describe('settledAsGone', () => {
  it('a client gone before the check answered, slots held: settled at once, and the handler is not to run', async () => {
    const { settle, facts } = recorder(10_000);
    const answers: boolean[] = [];
    await serve((res) => {
      // Like a check still with the store when the client goes away: asked after the close.
      res.once('close', () => setImmediate(() => answers.push(settledAsGone(res, settle))));
    }, 20);
    expect(answers).toEqual([true]);
    expect(facts()).toEqual([{ statusCode: 200, completed: false }]);
  });

  it('a client still there, or a decision holding no slots: false, nothing settled', async () => {
    const there = recorder(10_000);
    const noSlots = recorder(undefined);
    const answers: boolean[] = [];
    await serve((res) => {
      answers.push(settledAsGone(res, there.settle));
      res.once('close', () => setImmediate(() => answers.push(settledAsGone(res, noSlots.settle))));
    }, 20);
    expect(answers).toEqual([false, false]);
    expect([...there.facts(), ...noSlots.facts()]).toEqual([]);
  });
});
