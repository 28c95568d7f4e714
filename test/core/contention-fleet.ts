/**
 * Contention workers for the cross-process suites: contention-worker.ts bundled with esbuild and
 * forked, each an OS process holding its own Redis connections and limiters, driven over IPC.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '../..');

/** One forked worker and its inbox. */
export interface Worker {
  readonly child: ChildProcess;
  /** The next message, which must be of `type`. */
  next(type: string): Promise<Record<string, unknown>>;
}

/** Bundles contention-worker.ts once; returns the script's path. */
export async function buildWorkerScript(): Promise<string> {
  const outDir = join(root, 'node_modules/.cache/sluice-test');
  mkdirSync(outDir, { recursive: true });
  const script = join(outDir, 'contention-worker.mjs');
  await build({
    entryPoints: [join(here, 'contention-worker.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile: script,
    external: ['ioredis'],
    logLevel: 'silent',
  });
  return script;
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
