/**
 * Starts and stops private redis-server processes for tests: free loopback ports,
 * no persistence, stopped by PID. Used by every package's tests and by the demo.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface RedisProcess {
  readonly host: '127.0.0.1';
  readonly port: number;
  readonly url: string;
  readonly pid: number;
  /** Stop with SIGTERM (SIGKILL after 3 s) and remove its directory. */
  stop(): Promise<void>;
}

/** True when redis-server is on PATH. */
export function hasRedisServer(): boolean {
  return spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;
}

/** A port that was free on 127.0.0.1 a moment ago. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Resolves when `PING` on the port answers `PONG`. */
export async function waitForRedis(port: number, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const out = spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', String(port), 'ping'], { encoding: 'utf8' });
    if (out.stdout?.trim() === 'PONG') return;
    if (Date.now() > deadline)
      throw new Error(`redis on port ${port} did not answer PING within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Extra `redis-server` arguments, e.g. `['--cluster-enabled', 'yes']`. */
export interface StartRedisOptions {
  readonly port?: number;
  readonly args?: readonly string[];
  readonly dir?: string;
}

/** Start a private redis-server on a free loopback port. */
export async function startRedis(options: StartRedisOptions = {}): Promise<RedisProcess> {
  const port = options.port ?? (await freePort());
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'sluice-redis-'));
  const child: ChildProcess = spawn(
    'redis-server',
    [
      '--bind',
      '127.0.0.1',
      '--port',
      String(port),
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      dir,
      '--protected-mode',
      'yes',
      ...(options.args ?? []),
    ],
    { stdio: 'ignore', detached: false },
  );
  if (child.pid === undefined) throw new Error('redis-server did not start (is it on PATH?)');
  const pid = child.pid;
  let exited = false;
  child.once('exit', () => {
    exited = true;
  });
  await waitForRedis(port);
  return {
    host: '127.0.0.1',
    port,
    url: `redis://127.0.0.1:${port}`,
    pid,
    async stop() {
      if (!exited) {
        const done = new Promise<void>((r) => child.once('exit', () => r()));
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
        await done;
        clearTimeout(timer);
      }
      if (!options.dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}
