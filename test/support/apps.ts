/**
 * The example apps as processes: a table of apps (one row per framework) and helpers that
 * spawn nodes with an environment, wait for their `listening on <port>` line and stop them by PID.
 * Add a framework by adding a row to EXAMPLE_APPS; every suite that iterates it picks it up.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from './free-port.js';

/** The repository root. */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** How to start one example app. */
export interface ExampleAppSpec {
  /** Short name used in test titles: `express`, `koa`, `nest`, `hono`, `fastify`. */
  readonly name: string;
  /** The app's folder. */
  readonly dir: string;
  /** Executable and arguments, run in `dir` (the same thing `npm start` runs). */
  readonly command: readonly [string, ...string[]];
  /** A file that exists once the app is built (relative to `dir`). */
  readonly builtFile: string;
  /** Environment this row always sets (e.g. the platform of an app that has several). */
  readonly env?: Readonly<Record<string, string>>;
}

/** Every example app the many-node suites drive. */
export const EXAMPLE_APPS: readonly ExampleAppSpec[] = [
  {
    name: 'express',
    dir: join(REPO_ROOT, 'apps/express-example'),
    command: ['node', 'dist/main.js'],
    builtFile: 'dist/main.js',
  },
  {
    name: 'koa',
    dir: join(REPO_ROOT, 'apps/koa-example'),
    command: ['node', 'dist/main.js'],
    builtFile: 'dist/main.js',
  },
  {
    name: 'nest',
    dir: join(REPO_ROOT, 'apps/nest-example'),
    command: ['node', 'dist/main.js'],
    builtFile: 'dist/main.js',
  },
  {
    // The same Nest app on the Fastify platform.
    name: 'nest-fastify',
    dir: join(REPO_ROOT, 'apps/nest-example'),
    command: ['node', 'dist/main.js'],
    builtFile: 'dist/main.js',
    env: { NEST_PLATFORM: 'fastify' },
  },
  {
    name: 'hono',
    dir: join(REPO_ROOT, 'apps/hono-example'),
    command: ['node', 'dist/main.js'],
    builtFile: 'dist/main.js',
  },
  {
    name: 'fastify',
    dir: join(REPO_ROOT, 'apps/fastify-example'),
    command: ['node', 'dist/main.js'],
    builtFile: 'dist/main.js',
  },
];

/** Looks an app up by name. */
export function exampleApp(name: string): ExampleAppSpec {
  const spec = EXAMPLE_APPS.find((app) => app.name === name);
  if (spec === undefined) throw new Error(`no example app named "${name}" in EXAMPLE_APPS`);
  return spec;
}

/** Throws a clear message when an app has not been built. */
export function assertBuilt(spec: ExampleAppSpec): void {
  if (!existsSync(join(spec.dir, spec.builtFile))) {
    throw new Error(
      `${spec.name} example is not built (${join(spec.dir, spec.builtFile)} missing): run npm run build`,
    );
  }
}

/** One running example-app process. */
export interface AppNode {
  readonly app: string;
  readonly port: number;
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  readonly pid: number;
  /** Everything the process printed so far (stdout and stderr). */
  output(): string;
  /** SIGTERM, SIGKILL after 3 s; resolves once the process has exited. */
  stop(): Promise<void>;
}

/** Environment for a node: the example-app contract's variables. PORT is chosen here. */
export interface AppEnv {
  readonly REDIS_URL?: string;
  readonly REDIS_CLUSTER_NODES?: string;
  readonly SLUICE_PREFIX?: string;
  readonly [name: string]: string | undefined;
}

const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** Spawns one node of an app on a free port and waits for `listening on <port>`. */
export async function startApp(spec: ExampleAppSpec, env: AppEnv = {}, timeoutMs = 30_000): Promise<AppNode> {
  assertBuilt(spec);
  const port = await freePort();
  const [command, ...args] = spec.command;
  const child = spawn(command, args, {
    cwd: spec.dir,
    env: { ...process.env, NODE_ENV: 'production', ...spec.env, ...env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (child.pid === undefined) throw new Error(`${spec.name}: ${spec.command.join(' ')} did not start`);
  const pid = child.pid;
  running.add(child);
  let output = '';
  let exited = false;
  const exit = new Promise<void>((done) =>
    child.once('exit', () => {
      exited = true;
      running.delete(child);
      done();
    }),
  );
  const ready = new Promise<void>((done, fail) => {
    const timer = setTimeout(
      () => fail(new Error(`${spec.name} on port ${port} not listening after ${timeoutMs} ms:\n${output}`)),
      timeoutMs,
    );
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes(`listening on ${port}`)) {
        clearTimeout(timer);
        done();
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`${spec.name} exited with code ${code} before listening:\n${output}`));
    });
  });
  const node: AppNode = {
    app: spec.name,
    port,
    url: `http://127.0.0.1:${port}`,
    pid,
    output: () => output,
    async stop() {
      if (exited) return;
      process.kill(pid, 'SIGTERM');
      const timer = setTimeout(() => {
        if (!exited) process.kill(pid, 'SIGKILL');
      }, 3000);
      await exit;
      clearTimeout(timer);
    },
  };
  try {
    await ready;
  } catch (error) {
    await node.stop();
    throw error;
  }
  return node;
}

/** Starts one node per entry (app names may repeat), all with the same environment. */
export async function startApps(names: readonly string[], env: AppEnv = {}): Promise<AppNode[]> {
  const started = await Promise.allSettled(names.map((name) => startApp(exampleApp(name), env)));
  const nodes = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  const failure = started.find((result) => result.status === 'rejected');
  if (failure !== undefined) {
    await stopApps(nodes);
    throw (failure as PromiseRejectedResult).reason;
  }
  return nodes;
}

/** Stops every node, by PID. */
export async function stopApps(nodes: readonly AppNode[]): Promise<void> {
  await Promise.all(nodes.map((node) => node.stop()));
}
