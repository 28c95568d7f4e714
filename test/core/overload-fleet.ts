/**
 * The fleet proofs of the overload policies, shared by the standalone Redis and the Cluster
 * suites: 4 OS processes (overload-worker.ts) on one store. A concurrency limit is never exceeded
 * at any moment; waiting requests are never admitted beyond the rate, are spread over time and
 * none is early; a SIGKILLed holder's slots come back when their lease ends, not before.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { bundleWorker } from './bundle-worker.js';
import { startWorker, stopWorkers, type Worker } from './contention-fleet.js';
import { WORKER_LEASE_MS } from './overload-policies.js';

/** Processes in a fleet. */
export const FLEET_SIZE = 4;
/**
 * Clock skew allowed between two processes' timestamps (each is `performance.timeOrigin +
 * now()`, taken from the same system clock at start).
 */
const SKEW_MS = 1;

/** Bundles overload-worker.ts and starts `count` workers on `target` (`redis://...` or `cluster:h:p,...`). */
export async function startFleet(target: string, count = FLEET_SIZE): Promise<Worker[]> {
  const script = await bundleWorker('overload-worker');
  const workers = Array.from({ length: count }, (_, i) => startWorker(script, i, target, 1));
  await Promise.all(workers.map(readyOrExited));
  return workers;
}

/** Stops the workers still running (a SIGKILLed one is gone already). */
export function stopFleet(workers: readonly Worker[]): Promise<void> {
  return stopWorkers(
    workers.filter((worker) => worker.child.exitCode === null && worker.child.signalCode === null),
  );
}

/** Resolves once `worker` is ready; rejects when it exits before (a crash at start fails fast). */
function readyOrExited(worker: Worker): Promise<unknown> {
  const exited = new Promise((_, fail) =>
    worker.child.once('exit', (code) => fail(new Error(`overload worker exited with ${code} before ready`))),
  );
  return Promise.race([worker.next('ready'), exited]);
}

/** The most intervals that overlap at one instant (an interval ends before one starting at its end). */
export function maxOverlap(intervals: readonly (readonly [number, number])[]): number {
  const events = intervals.flatMap(([start, end]) => [
    [start + SKEW_MS, 1],
    [end - SKEW_MS, -1],
  ]);
  events.sort((a, b) => a[0]! - b[0]! || a[1]! - b[1]!);
  let open = 0;
  let most = 0;
  for (const [, step] of events) {
    open += step!;
    most = Math.max(most, open);
  }
  return most;
}

/**
 * Every process runs 3 clients for 1.5 s, each checking `in-flight` (limit 3) for one identity,
 * holding 5..25 ms when admitted and releasing: at no instant more than 3 in flight (admission to
 * end, as recorded by the processes), and 3 at once reached.
 */
export async function expectNeverMoreInFlight(workers: readonly Worker[]): Promise<void> {
  const identity = `fleet-inflight-${randomUUID()}`;
  for (const worker of workers) worker.child.send({ type: 'concurrent', identity, clients: 3, runMs: 1500 });
  const results = await Promise.all(workers.map((worker) => worker.next('concurrent')));
  const intervals = results.flatMap((result) => result.intervals as [number, number][]);
  const unavailable = results.reduce((sum, result) => sum + (result.unavailable as number), 0);
  const denied = results.reduce((sum, result) => sum + (result.denied as number), 0);
  console.log(
    `[in-flight fleet] ${intervals.length} admitted, ${denied} denied, max overlap ${maxOverlap(intervals)}`,
  );
  expect(unavailable).toBe(0);
  expect(intervals.length).toBeGreaterThan(20);
  expect(denied).toBeGreaterThan(0);
  expect(maxOverlap(intervals)).toBe(3);
}

/**
 * Every process fires 6 `queued` checks at once (24 for burst 5, 10/s, waiting up to 1000 ms):
 * at most 5 + 10/s x T admitted over any interval T, the ones beyond the burst spread over
 * time (at most 2 in any 50 ms), none before its turn (k x 100 ms after the first check was
 * sent), and the rest denied at once.
 */
export async function expectQueuedFleet(workers: readonly Worker[]): Promise<void> {
  const identity = `fleet-queued-${randomUUID()}`;
  for (const worker of workers) worker.child.send({ type: 'queued', identity, checks: 6 });
  const results = await Promise.all(workers.map((worker) => worker.next('queued')));
  const sentAt = Math.min(...results.map((result) => result.sentAt as number));
  const decisions = results.flatMap(
    (result) => result.decisions as { allowed: boolean; outcome: string; atMs: number }[],
  );
  const admitted = decisions.filter((d) => d.allowed).map((d) => d.atMs - sentAt);
  admitted.sort((a, b) => a - b);
  const denied = decisions.filter((d) => !d.allowed);
  const figures = `admitted at ${admitted.map((ms) => ms.toFixed(0)).join(', ')} ms`;
  console.log(`[queued fleet] ${figures}; ${denied.length} denied`);
  expect(denied.every((d) => d.outcome === 'over_limit')).toBe(true);
  // Denied at once: before the second waiter's turn.
  for (const d of denied) expect(d.atMs - sentAt, figures).toBeLessThan(200);
  expect(admitted.length, figures).toBeGreaterThanOrEqual(15);
  // Over any interval [i, j]: j - i + 1 admitted, at most burst + 10/s x T (+1: refill while checks arrive).
  for (let i = 0; i < admitted.length; i++) {
    for (let j = i; j < admitted.length; j++) {
      const allowance = 5 + Math.floor(((admitted[j]! - admitted[i]! + SKEW_MS) * 10) / 1000) + 1;
      expect(j - i + 1, `${figures}: [${i}, ${j}]`).toBeLessThanOrEqual(allowance);
    }
  }
  const waiters = admitted.slice(5);
  for (const [k, atMs] of waiters.entries()) {
    expect(atMs, `waiter ${k + 1} early: ${figures}`).toBeGreaterThanOrEqual((k + 1) * 100 - SKEW_MS);
  }
  for (let i = 0; i + 2 < waiters.length; i++) {
    expect(waiters[i + 2]! - waiters[i]!, `a herd: ${figures}`).toBeGreaterThan(50);
  }
}

/**
 * One process takes all 3 slots of an identity and is SIGKILLed at once (its slots are never
 * released nor renewed): another process is denied until the slots' lease (1 s from their taking)
 * ends, and admitted within 300 ms after it.
 */
export async function expectKilledHolderReclaimed(workers: readonly Worker[]): Promise<void> {
  const [holder, other] = workers as [Worker, Worker];
  const identity = `fleet-kill-${randomUUID()}`;
  holder.child.send({ type: 'hold', identity, slots: 3 });
  const held = await holder.next('hold');
  expect(held.admitted).toBe(3);
  const exited = new Promise((resolve) => holder.child.once('exit', resolve));
  holder.child.kill('SIGKILL');
  await exited;
  let admittedAt: number | undefined;
  let probes = 0;
  while (admittedAt === undefined && probes < 200) {
    other.child.send({ type: 'probe', identity });
    const probe = await other.next('probe');
    probes++;
    if (probe.allowed === true) admittedAt = probe.atMs as number;
    else {
      expect(probe.outcome).toBe('over_limit');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }
  expect(probes).toBeGreaterThan(1);
  expect(admittedAt).toBeDefined();
  // Not before the lease ends (taken no earlier than takenFrom), and soon after it (taken by takenBy).
  expect(admittedAt!).toBeGreaterThanOrEqual((held.takenFrom as number) + WORKER_LEASE_MS - SKEW_MS);
  expect(admittedAt!).toBeLessThanOrEqual((held.takenBy as number) + WORKER_LEASE_MS + 300);
}

/** A store the fleet runs on: its target for the workers, and how to stop it. */
export interface FleetStore {
  readonly target: string;
  stop(): Promise<void>;
}

/** The fleet's three proofs on the store `start` brings up, under `title`. */
export function describeFleet(title: string, start: () => Promise<FleetStore>): void {
  describe(title, () => {
    let store: FleetStore | undefined;
    let workers: Worker[] = [];
    beforeAll(async () => {
      store = await start();
      workers = await startFleet(store.target);
    });
    afterAll(async () => {
      await stopFleet(workers);
      await store?.stop();
    });

    test('in-flight (limit 3): never more than 3 in flight for one identity at any moment', async () => {
      await expectNeverMoreInFlight(workers);
    });

    test('queued (burst 5, 10/s, waits up to 1 s): never beyond the rate over any interval, spread, none early', async () => {
      await expectQueuedFleet(workers);
    });

    test('SIGKILL of a process holding 3 slots: reclaimed when the lease (1 s) ends, not before', async () => {
      await expectKilledHolderReclaimed(workers);
    });
  });
}
