/**
 * Starts and stops private redis-server processes: free loopback ports, no persistence, stopped
 * by PID. Used by every package's tests, the demo and the benchmarks. Plain ESM (types in
 * redis-server.d.ts) so that Node scripts (.mjs) and TypeScript tests import the same module.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port.js';

/**
 * Spawn `command` and resolve once it has started; a program that cannot start (not on PATH, not
 * executable) rejects with `<command> did not start (is it on PATH?)` instead of leaving an
 * unhandled 'error' event behind.
 * @param {string} command
 * @param {readonly string[]} args
 * @param {import('node:child_process').SpawnOptions} options
 * @returns {Promise<import('node:child_process').ChildProcess>}
 */
export function spawnProgram(command, args, options) {
  const child = spawn(command, args, options);
  return new Promise((resolve, reject) => {
    const failed = (error) => {
      child.off('spawn', started);
      reject(new Error(`${command} did not start (is it on PATH?): ${error.message}`));
    };
    const started = () => {
      child.off('error', failed);
      resolve(child);
    };
    child.once('error', failed);
    child.once('spawn', started);
  });
}

/** True when redis-server is on PATH. */
export function hasRedisServer() {
  return spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;
}

/** Resolves when `PING` on the port answers `PONG`. */
export async function waitForRedis(port, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const out = spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', String(port), 'ping'], { encoding: 'utf8' });
    if (out.stdout?.trim() === 'PONG') return;
    if (Date.now() > deadline)
      throw new Error(`redis on port ${port} did not answer PING within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Start a private redis-server on a free loopback port (or `options.port`), with extra
 * `options.args` (e.g. `['--cluster-enabled', 'yes']`), in `options.dir` or a fresh temporary one.
 */
export async function startRedis(options = {}) {
  const port = options.port ?? (await freePort());
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'sluice-redis-'));
  const child = await spawnProgram(
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
  const pid = /** @type {number} */ (child.pid);
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
        const done = new Promise((r) => child.once('exit', () => r()));
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
        await done;
        clearTimeout(timer);
      }
      if (!options.dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}
