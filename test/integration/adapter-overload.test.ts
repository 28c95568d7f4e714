/**
 * Concurrency slots and waiting through every adapter and framework major over real HTTP on
 * 127.0.0.1 (memory store): a slot is released when the response finishes, and when the client
 * goes away mid-request only once the handler is done (never more handlers in flight than the
 * limit), once per request with the middleware mounted twice; a request whose client left before
 * its check answered does not run the handler; a request waiting for its turn whose client goes
 * away gives the turn back.
 */

import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  createLimiter,
  type Limiter,
  MemoryStore,
  type PolicyInput,
  type Store,
  type StoreCheckOptions,
  type StoreEntry,
  type StoreMode,
  type StoreVerdict,
} from '@sluice/core';
import { afterEach, describe, expect, test } from 'vitest';
import { HARNESSES, heldHandlers, type Mount, type Served } from './adapters.js';
import { closeAgents, type OpenRequest, openRequest, type Reply, request } from './client.js';

const IN_FLIGHT: PolicyInput = { name: 'in-flight', algorithm: 'concurrency', limit: 2, leaseMs: '10s' };
/**
 * Time between two turns of `QUEUED`: longer than sending four waiters and taking them back
 * takes on a loaded machine (up to 0.6 s under 6 busy loops), so the turns given back are still
 * ahead when the next request comes.
 */
const TURN_MS = 1000;
const QUEUED: PolicyInput = {
  name: 'queued',
  algorithm: 'token-bucket',
  burst: 1,
  rate: `${1000 / TURN_MS}/s`,
  maxWaitMs: 5 * TURN_MS,
};

/**
 * A limiter with one policy. The deny cache is off: these tests are about when the adapter frees
 * a slot, which a remembered denial would hide behind its own expiry.
 */
function limiterOf(policy: PolicyInput, store: Store = new MemoryStore()): Limiter {
  // A deadline the slow store's checks meet.
  return createLimiter({ policies: [policy], store, denyCache: false, timeoutMs: 1000 });
}

/** A `MemoryStore` whose checks answer `delayMs` late, as a store across a slow network would. */
type SlotRefs = Parameters<NonNullable<Store['releaseSlots']>>[0];

class SlowStore implements Store {
  readonly kind = 'slow-memory';
  readonly #inner = new MemoryStore();

  constructor(private readonly delayMs: number) {}

  async decide(entries: readonly StoreEntry[], mode: StoreMode, options?: StoreCheckOptions) {
    await sleep(this.delayMs);
    return this.#inner.decide(entries, mode, options) as Promise<StoreVerdict[]>;
  }

  reset(keys: readonly string[]) {
    return this.#inner.reset(keys);
  }

  releaseSlots(slots: SlotRefs) {
    return this.#inner.releaseSlots(slots);
  }

  renewSlots(slots: SlotRefs) {
    return this.#inner.renewSlots(slots);
  }
}

/** Real time the server may take, on a loaded machine, to act on a request or on a client gone. */
const SEEN_WITHIN_MS = 5_000;

/** Waits until `done()` holds, up to `SEEN_WITHIN_MS` of real time; fails with `what` otherwise. */
async function until(done: () => boolean, what: string): Promise<void> {
  const deadlineMs = performance.now() + SEEN_WITHIN_MS;
  while (!done() && performance.now() < deadlineMs) await sleep(1);
  expect(done(), what).toBe(true);
}

/**
 * How long the holders' handlers run: longer than a loaded machine takes to send a request and
 * see it answered after they started, so a denial meant to meet them in flight does.
 */
const HOLD_MS = 2000;

/** Slots `limiter` holds of the `in-flight` policy (in this process). */
function slotsHeld(limiter: Limiter): number {
  return limiter.counters.overload.held.get('in-flight') ?? 0;
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
    const limiter = limiterOf(IN_FLIGHT);
    served = await harness.serve({ limiter, policies: ['in-flight'] }, mount);
    const url = `${served.url}/items/1`;
    const tag = randomUUID();
    const headers = { 'x-hold-ms': String(HOLD_MS), 'x-hold-tag': tag };
    const held = [request(url, { headers }), request(url, { headers })];
    // Both hold their slots: their handlers run.
    await until(() => heldHandlers(tag).started === 2, 'both holders reached their handlers');
    expectConcurrencyDenial(await request(url));
    expect(heldHandlers(tag).running, 'holders still in flight when the third was denied').toBe(2);
    expect((await Promise.all(held)).map((reply) => reply.status)).toEqual([200, 200]);
    // The release is one store call made when each response finished.
    await until(() => slotsHeld(limiter) === 0, 'both slots released');
    const again = await Promise.all([request(url), request(url)]);
    expect(again.map((reply) => reply.status)).toEqual([200, 200]);
  });

  test.each(MOUNTS)(
    'mounted on %s: a client gone mid-request keeps its slot until its handler is done, then frees it',
    async (mount) => {
      served = await harness.serve({ limiter: limiterOf(IN_FLIGHT), policies: ['in-flight'] }, mount);
      const url = `${served.url}/items/1`;
      const [gone, staying] = [randomUUID(), randomUUID()];
      const holders = [
        openRequest(url, { 'x-hold-ms': String(HOLD_MS), 'x-hold-tag': gone }),
        openRequest(url, { 'x-hold-ms': String(HOLD_MS + 3000), 'x-hold-tag': staying }),
      ];
      await until(
        () => heldHandlers(gone).started === 1 && heldHandlers(staying).started === 1,
        'both holders reached their handlers',
      );
      expectConcurrencyDenial(await request(url));
      holders[0]!.abort();
      // Its handler still runs: the slot is still held (300 ms for the server to see the client gone).
      await sleep(300);
      expectConcurrencyDenial(await request(url));
      expect(heldHandlers(gone).running, "the gone client's handler still ran when denied").toBe(1);
      // Once the handler is done, the slot is free.
      await until(() => heldHandlers(gone).running === 0, "the gone client's handler ended");
      let admitted: Reply | undefined;
      for (
        const started = performance.now();
        admitted === undefined && performance.now() - started < 1000;
      ) {
        const reply = await request(url);
        if (reply.status === 200) admitted = reply;
        else await sleep(10);
      }
      holders[1]!.abort();
      expect(admitted?.status, 'no slot freed within 1 s of the handler ending').toBe(200);
    },
  );

  /**
   * Limit 3 in flight on `store`; sends `count` requests holding `holdMs`, tagged for
   * `heldHandlers`, and aborts them all `abortAfterMs` later.
   */
  async function sendAndLeave(count: number, holdMs: number, abortAfterMs: number, store?: Store) {
    const limiter = limiterOf({ ...IN_FLIGHT, limit: 3 }, store);
    served = await harness.serve({ limiter, policies: ['in-flight'] }, 'route');
    const url = `${served.url}/items/1`;
    const tag = randomUUID();
    const headers = { 'x-hold-ms': String(holdMs), 'x-hold-tag': tag };
    const sent = Array.from({ length: count }, () => openRequest(url, headers));
    await sleep(abortAfterMs);
    for (const request of sent) request.abort();
    return { url, held: heldHandlers(tag) };
  }

  test('limit 3, 30 requests aborted right after sending: never more than 3 handlers in flight', async () => {
    // Right after sending: the requests reached the app (a handler may have started), the clients left.
    const { url, held } = await sendAndLeave(30, 400, 20);
    // Aborted requests keep arriving while the first handlers run; then every handler ends.
    await sleep(1200);
    const counted = `${held.started} started, at most ${held.peak} at once`;
    expect(held.running, counted).toBe(0);
    expect(held.peak, counted).toBeLessThanOrEqual(3);
    // None leaked: once the handlers ended, 3 are admitted at once.
    await sleep(50);
    const again = await Promise.all([request(url), request(url), request(url)]);
    expect(again.map((reply) => reply.status)).toEqual([200, 200, 200]);
  });

  test('a client gone before its check answered: the handler does not run, its slot is free at once', async () => {
    // Gone 50 ms after sending, while the checks are with the store (150 ms).
    const { url, held } = await sendAndLeave(3, 2000, 50, new SlowStore(150));
    // The checks answer (taking slots) 100 ms later, and the slots are freed.
    await sleep(250);
    expect(held.started, 'handlers run for clients that had left').toBe(0);
    const again = await Promise.all([request(url), request(url), request(url)]);
    expect(again.map((reply) => reply.status)).toEqual([200, 200, 200]);
  });

  test('a request waiting for its turn whose client goes away gives the turn back', async () => {
    const limiter = limiterOf(QUEUED);
    served = await harness.serve({ limiter, policies: ['queued'] }, 'route');
    const url = `${served.url}/items/1`;
    const { overload } = limiter.counters;
    const count = (counts: Map<string, number>) => counts.get('queued') ?? 0;
    const t0 = performance.now();
    expect((await request(url)).status).toBe(200);
    // Turns 1, 2, 3 and 4 turns after the first request: each waiter is sent once the one before
    // holds its turn, so the turns follow the order they were sent.
    const waiters: OpenRequest[] = [];
    for (let i = 0; i < 4; i++) {
      waiters.push(openRequest(url));
      const held = () => count(overload.waiting) + count(overload.admittedAfterWait);
      await until(() => held() === i + 1, `waiter ${i} holds its turn`);
    }
    // Given back latest first: each waiter goes away once the one after it gave its turn back.
    for (let i = waiters.length - 1; i >= 0; i--) {
      waiters[i]!.abort();
      await until(() => count(overload.waiting) <= i, `waiter ${i} gave its turn back`);
    }
    const next = await request(url);
    const atMs = performance.now() - t0;
    expect(next.status, next.text).toBe(200);
    // At about the first waiter's turn (1 turn), not after all four (5 turns).
    expect(atMs, `admitted ${atMs.toFixed(0)} ms after the first request`).toBeLessThan(2.5 * TURN_MS);
  });
});
