/**
 * A private redis-server for the benchmarks: a free loopback port, no persistence,
 * stopped by PID (the same approach as test/support/redis-server.ts, in plain ESM).
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A port that was free on 127.0.0.1 a moment ago. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function waitForPing(port, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const out = spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', String(port), 'ping'], { encoding: 'utf8' });
    if (out.stdout?.trim() === 'PONG') return;
    if (Date.now() > deadline)
      throw new Error(`redis on port ${port} did not answer PING within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Starts redis-server on a free port; resolves to `{ port, url, pid, stop() }`. */
export async function startRedis() {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-redis-'));
  const child = spawn(
    'redis-server',
    ['--bind', '127.0.0.1', '--port', String(port), '--save', '', '--appendonly', 'no', '--dir', dir],
    { stdio: 'ignore' },
  );
  if (child.pid === undefined) throw new Error('redis-server did not start (is it on PATH?)');
  let exited = false;
  child.once('exit', () => {
    exited = true;
  });
  await waitForPing(port);
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    pid: child.pid,
    async stop() {
      if (!exited) {
        const done = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
        await done;
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
