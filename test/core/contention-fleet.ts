/**
 * Contention workers for the cross-process suites: contention-worker.ts bundled with esbuild and
 * forked, each an OS process holding its own Redis connections and limiters, driven over IPC.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { bundleWorker } from './bundle-worker.js';

/** One forked worker and its inbox. */
export interface Worker {
  readonly child: ChildProcess;
  /** The next message, which must be of `type`. */
  next(type: string): Promise<Record<string, unknown>>;
}

/** Bundles contention-worker.ts once; returns the script's path. */
export function buildWorkerScript(): Promise<string> {
  return bundleWorker('contention-worker');
}

/** Forks worker `id` of `script` against the Redis at `url`, with `connections` connections. */
export function startWorker(script: string, id: number, url: string, connections: number): Worker {
  const child = fork(script, [], {
    env: {
      ...process.env,
      SLUICE_CONTENTION_URL: url,
      SLUICE_CONTENTION_CONNECTIONS: String(connections),
      SLUICE_CONTENTION_WORKER: String(id),
    },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const inbox: Record<string, unknown>[] = [];
  const waiting: ((m: Record<string, unknown>) => void)[] = [];
  child.on('message', (m: Record<string, unknown>) => {
    const waiter = waiting.shift();
    if (waiter) waiter(m);
    else inbox.push(m);
  });
  return {
    child,
    async next(type) {
      const m = inbox.shift() ?? (await new Promise<Record<string, unknown>>((r) => waiting.push(r)));
      if (m.type !== type) throw new Error(`worker ${id}: expected ${type}, got ${JSON.stringify(m)}`);
      return m;
    },
  };
}

/** Asks every worker to exit, and kills the ones still running after 3 s. */
export async function stopWorkers(workers: readonly Worker[]): Promise<void> {
  await Promise.all(
    workers.map(
      (w) =>
        new Promise<void>((done) => {
          if (w.child.exitCode !== null) return done();
          w.child.once('exit', () => done());
          w.child.send({ type: 'exit' });
          setTimeout(() => w.child.kill('SIGKILL'), 3000).unref();
        }),
    ),
  );
}
