/**
 * The example-app contract's leased route, checked over the nodes of a running set of apps
 * (standalone Redis and Cluster suites alike): `GET /leased`, policy `leased` (token bucket,
 * burst 100, 10/s, each instance leasing 10 units at a time for at most 1 s).
 */
import { expect } from 'vitest';
import { counterValue, json, type Reply, request } from '../integration/client.js';
import { EXPECTED } from './expected.js';

/** The `leased` policy of the example kit, as the bounds below need it. */
const BURST = 100;
const RATE_PER_SECOND = 10;
const LEASE_UNITS = 10;

/** Requests of the burst, sent at once round-robin over the nodes. */
const BURST_REQUESTS = 300;
/** Requests in flight during the stream that follows the burst, each worker pausing between requests. */
const STREAM_WORKERS = 8;
const STREAM_PAUSE_MS = 25;

/** Options of `expectLeasedBounds`. */
export interface LeasedRunOptions {
  /** How long to keep requesting after the burst (refill taken through new leases); 0: the burst alone. */
  readonly streamMs: number;
}

/** Decisions the nodes made from a lease, without a store call (their /metrics, summed). */
async function leaseDecisions(nodes: readonly { readonly url: string }[]): Promise<number> {
  const replies = await Promise.all(nodes.map((node) => request(`${node.url}/metrics`)));
  let total = 0;
  for (const reply of replies) {
    expect(reply.status).toBe(200);
    total += counterValue(reply.text, 'sluice_in_process_decisions_total', { source: 'lease' });
  }
  return total;
}

/** Every reply is a 200 `{"ok":true}` or a 429 problem+json with Retry-After, both with the policy's headers. */
function expectLeasedReplies(replies: readonly Reply[]): void {
  const other = replies.filter((reply) => reply.status !== 200 && reply.status !== 429);
  expect(other.map((reply) => `${reply.url} ${reply.status} ${reply.text}`)).toEqual([]);
  for (const reply of replies) {
    expect(reply.headers['ratelimit-policy'], reply.url).toBe('"leased";q=100;w=10');
    if (reply.status === 200) {
      expect(json(reply)).toEqual({ ok: true });
      expect(reply.headers.ratelimit, reply.url).toMatch(/^"leased";r=\d+;t=\d+$/);
      expect(reply.headers['retry-after']).toBeUndefined();
      continue;
    }
    // One unit comes back within 100 ms: the wait rounds up to one whole second.
    const retryAfter = Number(reply.headers['retry-after']);
    expect(retryAfter, reply.url).toBe(1);
    expect(reply.headers['cache-control']).toBe('no-store');
    expect(reply.headers.ratelimit, reply.url).toMatch(/^"leased";r=0;t=\d+$/);
    expect(json(reply)).toEqual(EXPECTED.tooManyRequests(['leased'], 'leased', retryAfter));
  }
}

const admittedOf = (replies: readonly Reply[]) => replies.filter((reply) => reply.status === 200).length;

/**
 * `/leased` for a fresh API key over `nodes`: a burst of 300 requests sent at once round-robin,
 * then (with `streamMs`) a paced stream. Over the interval T from just before the first request
 * to just after the last reply, the fleet admits at most burst + 10/s x T (every admitted request
 * spent a unit Redis charged within T), and after the burst at least burst - nodes x 10 (each
 * node strands at most one lease). Many decisions are made in-process, from the nodes' leases.
 */
export async function expectLeasedBounds(
  nodes: readonly { readonly url: string }[],
  key: string,
  options: LeasedRunOptions,
): Promise<void> {
  const headers = { 'x-api-key': key };
  const get = (i: number) => request(`${nodes[i % nodes.length]!.url}/leased`, { headers });
  const leasedBefore = await leaseDecisions(nodes);

  const started = performance.now();
  const burst = await Promise.all(Array.from({ length: BURST_REQUESTS }, (_, i) => get(i)));
  const burstSeconds = (performance.now() - started) / 1000;
  expectLeasedReplies(burst);
  const burstAdmitted = admittedOf(burst);
  const leasedAfterBurst = (await leaseDecisions(nodes)) - leasedBefore;

  const stream: Reply[] = [];
  let next = BURST_REQUESTS;
  const streamEnd = performance.now() + options.streamMs;
  await Promise.all(
    Array.from({ length: options.streamMs > 0 ? STREAM_WORKERS : 0 }, async () => {
      while (performance.now() < streamEnd) {
        stream.push(await get(next++));
        await new Promise((resolve) => setTimeout(resolve, STREAM_PAUSE_MS));
      }
    }),
  );
  const totalSeconds = (performance.now() - started) / 1000;
  expectLeasedReplies(stream);
  const streamAdmitted = admittedOf(stream);
  console.log(
    `[leased] ${nodes.length} nodes: burst ${burstAdmitted}/${BURST_REQUESTS} admitted in ` +
      `${burstSeconds.toFixed(2)} s (${leasedAfterBurst} from a lease); stream ${streamAdmitted}/` +
      `${stream.length} admitted, ${totalSeconds.toFixed(2)} s in all`,
  );

  // Never more than the policy allows a fresh key in the interval, leases or not.
  expect(burstAdmitted).toBeLessThanOrEqual(BURST + RATE_PER_SECOND * burstSeconds);
  expect(burstAdmitted + streamAdmitted).toBeLessThanOrEqual(BURST + RATE_PER_SECOND * totalSeconds);
  // Under-use at most one lease per node; the burst was more than the budget, so some were denied.
  expect(burstAdmitted).toBeGreaterThanOrEqual(BURST - nodes.length * LEASE_UNITS);
  expect(burstAdmitted).toBeLessThan(BURST_REQUESTS);
  // Leased: many requests decided in-process (spent from a lease, or a denied take remembered until
  // its wait is over), where an unleased policy decides none there; never more than were sent.
  expect(leasedAfterBurst).toBeGreaterThanOrEqual(burstAdmitted / 2);
  expect(leasedAfterBurst).toBeLessThanOrEqual(BURST_REQUESTS);
  // The refill reaches the nodes through new leases once the burst's budget is spent.
  if (options.streamMs > 0) expect(streamAdmitted).toBeGreaterThan(0);
}

/** Requests of the fresh-key burst whose script calls `expectFewScriptCalls` counts, sent at once to one node. */
const COUNTED_BURST_REQUESTS = 1000;

/**
 * `/leased` for a fresh API key on one node: 1,000 requests sent at once, and the script calls
 * Redis ran for them (`scriptCalls`: Redis's count so far, read before and after; nothing else may
 * call meanwhile). The first request is exact, 10 takes of 10 spend the burst, and a denied take is
 * remembered until a unit comes back (100 ms): over T seconds, at most 1 + 100 / 10 calls plus one
 * take granted and one denied per unit refilled (and one more each for the interval's ends), where
 * an unleased policy makes a call for about every request the node serves alone.
 */
export async function expectFewScriptCalls(
  node: { readonly url: string },
  key: string,
  scriptCalls: () => Promise<number>,
): Promise<void> {
  const headers = { 'x-api-key': key };
  const before = await scriptCalls();
  const started = performance.now();
  const replies = await Promise.all(
    Array.from({ length: COUNTED_BURST_REQUESTS }, () => request(`${node.url}/leased`, { headers })),
  );
  const seconds = (performance.now() - started) / 1000;
  const calls = (await scriptCalls()) - before;
  expectLeasedReplies(replies);
  const admitted = admittedOf(replies);
  console.log(
    `[leased] ${node.url}: ${COUNTED_BURST_REQUESTS} at once on a fresh key, ${admitted} admitted in ` +
      `${seconds.toFixed(2)} s, ${calls} script calls`,
  );
  expect(admitted).toBeGreaterThanOrEqual(BURST);
  expect(admitted).toBeLessThanOrEqual(BURST + RATE_PER_SECOND * seconds);
  expect(calls).toBeLessThanOrEqual(1 + BURST / LEASE_UNITS + 3 * (1 + RATE_PER_SECOND * seconds));
}
