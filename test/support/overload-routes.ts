/**
 * The example-app contract's overload routes, checked over the nodes of a running set of apps
 * (standalone Redis and Cluster suites alike): `GET /concurrent?ms=N` (`in-flight`: 3 in flight
 * per identity, slot lease 10 s) and `GET /queued` (`queued`: burst 5, 10/s, waits up to 1000 ms).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'vitest';
import { json, type OpenRequest, openRequest, type Reply, request } from '../integration/client.js';
import type { NodeFor } from './settle-routes.js';

/** The `in-flight` policy's limit. */
const IN_FLIGHT = 3;
/** The `in-flight` policy's slot lease: a slot not released comes back only after it. */
const LEASE_SECONDS = 10;
/** The `queued` policy: burst, ms per unit of refill (10/s), longest wait. */
const QUEUED = { burst: 5, msPerUnit: 100, maxWaitMs: 1000 } as const;
/** How late a waiting request may be admitted after its turn (design.md). */
const LATE_MS = 50;
/**
 * Time the server may take to release a slot or give a turn back after the client saw its
 * response end or went away: the release is one store call started by the response's end.
 */
const RELEASE_MS = 100;

/** The concurrency denial: 429, `Retry-After` within the lease, `RateLimit-Policy` with `qu`. */
function expectConcurrencyDenial(reply: Reply): void {
  expect(reply.status, reply.text).toBe(429);
  const retryAfter = Number(reply.headers['retry-after']);
  expect(
    Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= LEASE_SECONDS,
    `Retry-After ${retryAfter}`,
  ).toBe(true);
  const policy = reply.headers['ratelimit-policy'] ?? '';
  expect(policy).toContain('"in-flight";q=3');
  expect(policy).toContain('qu="concurrent-requests"');
  expect(policy).not.toContain(';w=');
}

/**
 * `/concurrent`: of 4 requests at once, each holding 800 ms, 3 are admitted and 1 is answered
 * 429 at once (before any of the 3 ended); once the 3 ended, 3 new ones are admitted at once.
 */
export async function expectConcurrentLimit(nodeFor: NodeFor, key: string): Promise<void> {
  const headers = { 'x-api-key': key };
  const first = await Promise.all(
    Array.from({ length: IN_FLIGHT + 1 }, (_, i) =>
      request(`${nodeFor(i).url}/concurrent?ms=800`, { headers }),
    ),
  );
  const admitted = first.filter((reply) => reply.status === 200);
  const denied = first.filter((reply) => reply.status !== 200);
  expect(admitted.length, first.map((r) => `${r.status} ${r.text}`).join('\n')).toBe(IN_FLIGHT);
  for (const reply of admitted) expect(json(reply)).toEqual({ ok: true });
  expect(denied).toHaveLength(1);
  expectConcurrencyDenial(denied[0]!);
  expect(denied[0]!.elapsedMs).toBeLessThan(Math.min(...admitted.map((reply) => reply.elapsedMs)));
  await sleep(RELEASE_MS);
  const again = await Promise.all(
    Array.from({ length: IN_FLIGHT }, (_, i) => request(`${nodeFor(i).url}/concurrent?ms=0`, { headers })),
  );
  expect(again.map((reply) => reply.status)).toEqual([200, 200, 200]);
}

/** `/concurrent?ms=N` out of range: 400 naming `ms` and the value. */
export async function expectConcurrentBadMs(nodeFor: NodeFor, key: string): Promise<void> {
  const reply = await request(`${nodeFor(0).url}/concurrent?ms=5001`, { headers: { 'x-api-key': key } });
  expect(reply.status).toBe(400);
  expect(json(reply)).toEqual({ ok: false, error: '"ms" must be a whole number from 0 to 5000, got 5001' });
}

/** How long the aborted request's handler of `expectAbortFreesSlot` runs. */
const ABORTED_HOLD_MS = 1500;

/**
 * `/concurrent`: a client that goes away mid-request keeps its slot while its handler runs, and
 * frees it once the handler is done. One request holding 1.5 s, then three holding 4 s (two
 * admitted, one denied); the first is aborted at once: 300 ms later a new request is still denied
 * (its handler runs), and once that handler ended a new request is admitted, well before the
 * others end (4 s) and before the lease would give the slot back (10 s).
 */
export async function expectAbortFreesSlot(nodeFor: NodeFor, key: string): Promise<void> {
  const headers = { 'x-api-key': key };
  const started = performance.now();
  const aborted = openRequest(`${nodeFor(0).url}/concurrent?ms=${ABORTED_HOLD_MS}`, headers);
  await sleep(100);
  const holders = Array.from({ length: IN_FLIGHT }, (_, i) =>
    openRequest(`${nodeFor(i + 1).url}/concurrent?ms=4000`, headers),
  );
  const deniedIndex = await Promise.race(holders.map((holder, i) => holder.reply.then(() => i)));
  expectConcurrencyDenial(await holders[deniedIndex]!.reply);
  aborted.abort();
  // Its handler still runs: its slot is still held.
  await sleep(300);
  expectConcurrencyDenial(await request(`${nodeFor(1).url}/concurrent?ms=0`, { headers }));
  await sleep(Math.max(0, ABORTED_HOLD_MS - (performance.now() - started)));
  const handlerEnded = performance.now();
  let admitted: Reply | undefined;
  for (let i = 0; admitted === undefined && performance.now() - handlerEnded < 2000; i++) {
    const reply = await request(`${nodeFor(i).url}/concurrent?ms=0`, { headers });
    if (reply.status === 200) admitted = reply;
    else await sleep(20);
  }
  const admittedAfterMs = performance.now() - handlerEnded;
  for (const holder of holders) holder.abort();
  expect(admitted?.status, `no slot freed ${admittedAfterMs.toFixed(0)} ms after the handler ended`).toBe(
    200,
  );
  // Both other holders were still in flight: the slot came from the aborted request.
  expect(performance.now() - started).toBeLessThan(4000);
}

/** Fires `count` requests to `/queued` at once; each reply with its arrival, ms after `t0`. */
async function queuedBurst(nodeFor: NodeFor, key: string, count: number, from = 0) {
  const t0 = performance.now();
  const replies = await Promise.all(
    Array.from({ length: count }, (_, i) =>
      request(`${nodeFor(from + i).url}/queued`, { headers: { 'x-api-key': key } }).then((reply) => ({
        reply,
        atMs: performance.now() - t0,
      })),
    ),
  );
  return replies;
}

/**
 * `/queued`: 17 requests at once: the burst (5) is admitted at once, the next 10 wait for their
 * turns 100, 200, ... 1000 ms after the first charge (none early; beyond the client's own round
 * trip, the median at most 50 ms late, none a turn late), and the 2 whose turn lies past 1000 ms
 * get 429 at once.
 */
export async function expectQueuedTurns(nodeFor: NodeFor, key: string): Promise<void> {
  const waiting = QUEUED.maxWaitMs / QUEUED.msPerUnit;
  const replies = await queuedBurst(nodeFor, key, QUEUED.burst + waiting + 2);
  const admitted = replies.filter(({ reply }) => reply.status === 200).map(({ atMs }) => atMs);
  const denied = replies.filter(({ reply }) => reply.status !== 200);
  admitted.sort((a, b) => a - b);
  const figures = `admitted at ${admitted.map((ms) => ms.toFixed(0)).join(', ')} ms`;
  // Refill while the requests arrive may admit one more at most (they all arrive within 100 ms).
  expect(admitted.length, figures).toBeGreaterThanOrEqual(QUEUED.burst + waiting);
  expect(admitted.length, figures).toBeLessThanOrEqual(QUEUED.burst + waiting + 1);
  for (const { reply, atMs } of denied) {
    expect(reply.status, reply.text).toBe(429);
    expect(Number(reply.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    // Answered at once, not after sleeping in vain (it would have slept at least 1000 ms).
    expect(atMs, `denied at ${atMs.toFixed(0)} ms; ${figures}`).toBeLessThan(QUEUED.maxWaitMs / 4);
  }
  // The burst's round trip bounds the client's view of when the first charge happened.
  const roundTripMs = admitted[QUEUED.burst - 1]!;
  const lateMs: number[] = [];
  for (let k = 1; k <= waiting; k++) {
    const atMs = admitted[QUEUED.burst + k - 1]!;
    expect(atMs, `waiter ${k} early: ${figures}`).toBeGreaterThanOrEqual(k * QUEUED.msPerUnit);
    lateMs.push(atMs - k * QUEUED.msPerUnit - roundTripMs);
  }
  // Seen from the client, lateness also holds the scheduling of a client and servers sharing a
  // busy machine: the median within 50 ms, each less than a turn late (never behind the next turn).
  lateMs.sort((a, b) => a - b);
  expect(lateMs[Math.floor(lateMs.length / 2)]!, `median lateness: ${figures}`).toBeLessThanOrEqual(LATE_MS);
  expect(lateMs[lateMs.length - 1]!, `most late: ${figures}`).toBeLessThan(QUEUED.msPerUnit);
}

/** Gap between sends and between aborts, so the server sees them in that order. */
const ORDER_GAP_MS = 10;

/**
 * Opens `count` requests to `url` one after another, `ORDER_GAP_MS` apart, so the turns they
 * reserve follow the order they were sent.
 */
export async function openWaiters(
  url: string,
  headers: Record<string, string>,
  count: number,
): Promise<OpenRequest[]> {
  const waiters: OpenRequest[] = [];
  for (let i = 0; i < count; i++) {
    if (i > 0) await sleep(ORDER_GAP_MS);
    waiters.push(openRequest(url, headers));
  }
  return waiters;
}

/**
 * Aborts `waiters` latest first, `ORDER_GAP_MS` apart: a cancelled turn gives back only what no
 * later turn stands on, so turns come back whole when cancelled latest first.
 */
export async function abortLatestFirst(waiters: readonly OpenRequest[]): Promise<void> {
  for (let i = waiters.length - 1; i >= 0; i--) {
    waiters[i]!.abort();
    if (i > 0) await sleep(ORDER_GAP_MS);
  }
}

/**
 * `/queued`: waiting requests whose clients go away give their turns back. The burst (5), then 5
 * waiters (turns 100..500 ms) on one node; once they reserved their turns they go away, latest
 * first; a request sent then is admitted at about the first waiter's turn (100 ms), where without
 * the turns given back it would wait until 600 ms.
 */
export async function expectAbortGivesTurnBack(nodeFor: NodeFor, key: string): Promise<void> {
  const headers = { 'x-api-key': key };
  const t0 = performance.now();
  const burst = await Promise.all(
    Array.from({ length: QUEUED.burst }, (_, i) => request(`${nodeFor(i).url}/queued`, { headers })),
  );
  expect(burst.map((reply) => reply.status)).toEqual([200, 200, 200, 200, 200]);
  const waiters = await openWaiters(`${nodeFor(0).url}/queued`, headers, 5);
  // Let the last waiter's check reach the store (it reserves its turn), then go away. The first
  // waiter may be admitted by then; the four others give back 400 ms.
  await sleep(4 * ORDER_GAP_MS);
  await abortLatestFirst(waiters);
  await sleep(RELEASE_MS / 2);
  const next = await request(`${nodeFor(0).url}/queued`, { headers });
  const atMs = performance.now() - t0;
  expect(next.status, next.text).toBe(200);
  expect(atMs, `admitted ${atMs.toFixed(0)} ms after the burst`).toBeLessThan(6 * QUEUED.msPerUnit - 200);
}
