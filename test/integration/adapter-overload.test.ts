/**
 * Concurrency slots and waiting through every adapter and framework major over real HTTP on
 * 127.0.0.1 (memory store): a slot is released when the response finishes and when the client
 * goes away mid-request, once per request with the middleware mounted twice; a request waiting for
 * its turn whose client goes away gives the turn back.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { createLimiter, type Limiter, MemoryStore, type PolicyInput } from '@sluice/core';
import { afterEach, describe, expect, test } from 'vitest';
import { abortLatestFirst, openWaiters } from '../support/overload-routes.js';
import { HARNESSES, type Mount, type Served } from './adapters.js';
import { closeAgents, openRequest, type Reply, request } from './client.js';

const IN_FLIGHT: PolicyInput = { name: 'in-flight', algorithm: 'concurrency', limit: 2, leaseMs: '10s' };
const QUEUED: PolicyInput = {
  name: 'queued',
  algorithm: 'token-bucket',
  burst: 1,
  rate: '5/s',
  maxWaitMs: 1000,
};

/**
 * A limiter with one policy. The deny cache is off: these tests are about when the adapter frees
 * a slot, which a remembered denial would hide behind its own expiry.
 */
function limiterOf(policy: PolicyInput): Limiter {
  return createLimiter({ policies: [policy], store: new MemoryStore(), denyCache: false });
}

let served: Served | undefined;
afterEach(async () => {
  await served?.close();
  served = undefined;
  closeAgents();
});

function expectConcurrencyDenial(reply: Reply): void {
  expect(reply.status, reply.text).toBe(429);
  expect(Number(reply.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  expect(reply.headers['ratelimit-policy']).toBe('"in-flight";q=2;qu="concurrent-requests"');
}

const MOUNTS: readonly Mount[] = ['route', 'both'];

describe.each(HARNESSES)('$name', (harness) => {
  test.each(MOUNTS)('mounted on %s: slots freed when responses finish', async (mount) => {
    served = await harness.serve({ limiter: limiterOf(IN_FLIGHT), policies: ['in-flight'] }, mount);
    const url = `${served.url}/items/1`;
    const held = [
      request(url, { headers: { 'x-hold-ms': '400' } }),
      request(url, { headers: { 'x-hold-ms': '400' } }),
    ];
    await sleep(100);
    expectConcurrencyDenial(await request(url));
    expect((await Promise.all(held)).map((reply) => reply.status)).toEqual([200, 200]);
    // The release is one store call made when each response finished.
    await sleep(50);
    const again = await Promise.all([request(url), request(url)]);
    expect(again.map((reply) => reply.status)).toEqual([200, 200]);
  });

  test.each(MOUNTS)('mounted on %s: a client gone mid-request frees its slot', async (mount) => {
    served = await harness.serve({ limiter: limiterOf(IN_FLIGHT), policies: ['in-flight'] }, mount);
    const url = `${served.url}/items/1`;
    const holders = [openRequest(url, { 'x-hold-ms': '5000' }), openRequest(url, { 'x-hold-ms': '5000' })];
    await sleep(100);
    expectConcurrencyDenial(await request(url));
    holders[0]!.abort();
    const aborted = performance.now();
    let admitted: Reply | undefined;
    while (admitted === undefined && performance.now() - aborted < 1000) {
      const reply = await request(url);
      if (reply.status === 200) admitted = reply;
      else await sleep(10);
    }
    holders[1]!.abort();
    expect(admitted?.status, 'no slot freed within 1 s of the abort').toBe(200);
  });

  test('a request waiting for its turn whose client goes away gives the turn back', async () => {
    served = await harness.serve({ limiter: limiterOf(QUEUED), policies: ['queued'] }, 'route');
    const url = `${served.url}/items/1`;
    const t0 = performance.now();
    expect((await request(url)).status).toBe(200);
    // Turns 200, 400, 600 and 800 ms after the first request, given back latest first.
    const waiters = await openWaiters(url, {}, 4);
    await sleep(50);
    await abortLatestFirst(waiters);
    await sleep(30);
    const next = await request(url);
    const atMs = performance.now() - t0;
    expect(next.status, next.text).toBe(200);
    // At about the first waiter's turn (200 ms), not after all four (1000 ms).
    expect(atMs, `admitted ${atMs.toFixed(0)} ms after the first request`).toBeLessThan(500);
  });
});
