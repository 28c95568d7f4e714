/**
 * Two processes, one store: instance A is denied (and remembers it in-process: its deny cache, a
 * lease's denied take, its local stage), instance B resets the identity, and A must admit it again
 * within a second. Shared by the standalone Redis and the Cluster tests.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { expect } from 'vitest';
import { bundleWorker } from './bundle-worker.js';
import { RESET_ROWS, type ResetRow } from './reset-rows.js';

export { RESET_ROWS, type ResetRow };

/** How often A checks while it waits: the resolution of the measured delay. */
export const POLL_MS = 10;

/** A worker process and its messages. */
export interface ResetWorker {
  readonly child: ChildProcess;
  send(message: Record<string, unknown>): void;
  /** The next message; throws unless its type is one of `types`. */
  next(...types: string[]): Promise<Record<string, unknown>>;
  stop(): Promise<void>;
}

/** Bundles reset-worker.ts once; returns the script's path. */
export function buildResetWorker(): Promise<string> {
  return bundleWorker('reset-worker');
}

/** Starts one instance; `env` says which store (SLUICE_RESET_URL or SLUICE_RESET_CLUSTER). */
export async function startResetWorker(script: string, env: Record<string, string>): Promise<ResetWorker> {
  const child = fork(script, [], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const inbox: Record<string, unknown>[] = [];
  const waiting: ((m: Record<string, unknown>) => void)[] = [];
  child.on('message', (m: Record<string, unknown>) => {
    const waiter = waiting.shift();
    if (waiter) waiter(m);
    else inbox.push(m);
  });
  const worker: ResetWorker = {
    child,
    send: (message) => child.send(message),
    async next(...types) {
      const m = inbox.shift() ?? (await new Promise<Record<string, unknown>>((r) => waiting.push(r)));
      if (!types.includes(m.type as string))
        throw new Error(`reset worker: expected ${types.join(' or ')}, got ${JSON.stringify(m)}`);
      return m;
    },
    stop: () =>
      new Promise<void>((done) => {
        if (child.exitCode !== null) return done();
        child.once('exit', () => done());
        child.send({ type: 'exit' });
        setTimeout(() => child.kill('SIGKILL'), 3000).unref();
      }),
  };
  await worker.next('ready');
  return worker;
}

/** The latest a reset may be seen by the other process in `row` (ms), to the resolution of its checks. */
export const seenWithinMs = (row: ResetRow): number => 1000 + RESET_ROWS[row].slackMs + POLL_MS;

/**
 * In `row`, A drains `identity` until denied in-process, keeps checking for `cachedForMs`, B
 * resets it, and A checks every POLL_MS until admitted. Returns ms from the end of B's reset to A's
 * admission, and how many of A's denials were made in-process while it waited.
 */
export async function resetSeenAfterMs(
  a: ResetWorker,
  b: ResetWorker,
  { row, identity, cachedForMs }: { row: ResetRow; identity: string; cachedForMs: number },
): Promise<{ delayMs: number; inProcessDenials: number } | undefined> {
  a.send({ type: 'drain', row, identity });
  const drained = await a.next('drained');
  if (drained.source === 'store') throw new Error(`A was never denied in-process (${row})`);
  a.send({ type: 'poll', row, identity, everyMs: POLL_MS, giveUpMs: cachedForMs + 5000 });
  await new Promise((r) => setTimeout(r, cachedForMs));
  b.send({ type: 'reset', row, identity });
  const reset = await b.next('reset-done');
  const answer = await a.next('admitted', 'gave-up');
  if (answer.type !== 'admitted') return undefined;
  return {
    delayMs: (answer.atMs as number) - (reset.atMs as number),
    inProcessDenials: answer.inProcessDenials as number,
  };
}

/**
 * In `row`, one reset per entry of `cachedForMs` (identity `${identityPrefix}-${i}`): A must have
 * denied in-process until then and admit within `seenWithinMs(row)` of B's reset. Returns the delays.
 */
export async function expectResetsSeen(
  a: ResetWorker,
  b: ResetWorker,
  row: ResetRow,
  { identityPrefix, cachedForMs }: { identityPrefix: string; cachedForMs: readonly number[] },
): Promise<number[]> {
  const delays: number[] = [];
  for (const [i, forMs] of cachedForMs.entries()) {
    const seen = await resetSeenAfterMs(a, b, {
      row,
      identity: `${identityPrefix}-${i}`,
      cachedForMs: forMs,
    });
    expect(seen, 'A never admitted the identity B reset').toBeDefined();
    // A really was answering in-process until then.
    expect(seen!.inProcessDenials).toBeGreaterThan(0);
    delays.push(seen!.delayMs);
    // Within the 1 s maximum age of every in-process denial, to the resolution of A's checks.
    expect(seen!.delayMs).toBeLessThanOrEqual(seenWithinMs(row));
  }
  return delays;
}
