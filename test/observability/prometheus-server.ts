/**
 * A private Prometheus server (Debian's `prometheus` binary) for tests: a free loopback port, a
 * temporary config and data directory, the given rule files, stopped by PID.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../support/free-port.js';
import { spawnProgram } from '../support/redis-server.js';

/** One running Prometheus. */
export interface PrometheusProcess {
  readonly url: string;
  readonly pid: number;
  /** GET `/api/v1/<path>` and the `data` of a successful answer; throws with Prometheus's error otherwise. */
  api<T>(path: string, params?: Record<string, string>): Promise<T>;
  /** Everything it printed so far. */
  output(): string;
  /** SIGTERM (SIGKILL after 5 s), then removes its directory. */
  stop(): Promise<void>;
}

/** Starts Prometheus scraping `targets` (host:port) every second, with `ruleFiles` loaded. */
export async function startPrometheus(
  targets: readonly string[],
  ruleFiles: readonly string[],
): Promise<PrometheusProcess> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'sluice-prometheus-'));
  const config = join(dir, 'prometheus.yml');
  writeFileSync(
    config,
    [
      'global:',
      '  scrape_interval: 1s',
      '  evaluation_interval: 1s',
      'rule_files:',
      ...ruleFiles.map((file) => `  - ${JSON.stringify(file)}`),
      'scrape_configs:',
      '  - job_name: sluice',
      '    static_configs:',
      `      - targets: [${targets.map((t) => JSON.stringify(t)).join(', ')}]`,
      '',
    ].join('\n'),
  );
  const child: ChildProcess = await spawnProgram(
    'prometheus',
    [
      `--config.file=${config}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const pid = child.pid as number;
  let output = '';
  let exited = false;
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exit = new Promise<void>((done) =>
    child.once('exit', () => {
      exited = true;
      done();
    }),
  );
  const url = `http://127.0.0.1:${port}`;
  const prometheus: PrometheusProcess = {
    url,
    pid,
    output: () => output,
    async api<T>(path: string, params: Record<string, string> = {}): Promise<T> {
      const response = await fetch(`${url}/api/v1/${path}?${new URLSearchParams(params)}`);
      const body = (await response.json()) as { status: string; data: T; error?: string };
      if (body.status !== 'success') throw new Error(`prometheus ${path}: ${body.error ?? response.status}`);
      return body.data;
    },
    async stop() {
      if (!exited) {
        process.kill(pid, 'SIGTERM');
        const timer = setTimeout(() => {
          if (!exited) process.kill(pid, 'SIGKILL');
        }, 5000);
        await exit;
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (exited) throw new Error(`prometheus exited before it was ready:\n${output}`);
    try {
      if ((await fetch(`${url}/-/ready`)).ok) return prometheus;
    } catch {
      // Not listening yet.
    }
    if (Date.now() > deadline) {
      await prometheus.stop();
      throw new Error(`prometheus not ready after 30 s:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
