/**
 * Starts a private Redis Sentinel setup for tests: a primary, a replica and three sentinels
 * (`redis-sentinel`) on free loopback ports, each in its own temporary directory, stopped by
 * PID. The sentinels monitor the primary under the name `SENTINEL_MASTER_NAME`.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port.js';
import { redisCli } from './redis-cluster.js';
import { type RedisProcess, spawnProgram, startRedis, waitForRedis } from './redis-server.js';

/** The name the sentinels monitor. */
export const SENTINEL_MASTER_NAME = 'sluice-primary';

/** A running primary, replica and sentinels. */
export interface RedisSentinelSetup {
  readonly primary: RedisProcess;
  readonly replica: RedisProcess;
  /** Sentinel ports, for ioredis `sentinels: [{ host, port }]`. */
  readonly sentinels: readonly { host: '127.0.0.1'; port: number }[];
  /** The primary's port as the sentinels report it now. */
  primaryPort(): Promise<number>;
  /** Resolves once the replica reports its link to the primary up. */
  waitReplicated(timeoutMs?: number): Promise<void>;
  /** Resolves once every sentinel sees the replica and the other sentinels. */
  waitSentinelsReady(timeoutMs?: number): Promise<void>;
  /** Stop everything by PID and remove the directories. */
  stop(): Promise<void>;
}

/** Options of {@link startRedisSentinel}. */
export interface StartRedisSentinelOptions {
  /** `down-after-milliseconds`: how long the primary must be unreachable. Default 1000. */
  readonly downAfterMs?: number;
  /** `failover-timeout`. Default 5000. */
  readonly failoverTimeoutMs?: number;
}

async function waitFor(what: string, timeoutMs: number, ready: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await ready().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`${what} not ready within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function info(output: string, field: string): string | undefined {
  return new RegExp(`^${field}:(.*)$`, 'm').exec(output)?.[1]?.trim();
}

/** Starts a primary, a replica of it and three sentinels monitoring it (quorum 2). */
export async function startRedisSentinel(
  options: StartRedisSentinelOptions = {},
): Promise<RedisSentinelSetup> {
  const primary = await startRedis();
  const replica = await startRedis({ args: ['--replicaof', '127.0.0.1', String(primary.port)] });
  const children: { child: ChildProcess; dir: string }[] = [];
  const sentinels: { host: '127.0.0.1'; port: number }[] = [];
  for (let i = 0; i < 3; i++) {
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), 'sluice-sentinel-'));
    const conf = join(dir, 'sentinel.conf');
    writeFileSync(
      conf,
      [
        `port ${port}`,
        'bind 127.0.0.1',
        `dir ${dir}`,
        `sentinel monitor ${SENTINEL_MASTER_NAME} 127.0.0.1 ${primary.port} 2`,
        `sentinel down-after-milliseconds ${SENTINEL_MASTER_NAME} ${options.downAfterMs ?? 1000}`,
        `sentinel failover-timeout ${SENTINEL_MASTER_NAME} ${options.failoverTimeoutMs ?? 5000}`,
        `sentinel parallel-syncs ${SENTINEL_MASTER_NAME} 1`,
        '',
      ].join('\n'),
    );
    const child = await spawnProgram('redis-sentinel', [conf], { stdio: 'ignore' });
    children.push({ child, dir });
    sentinels.push({ host: '127.0.0.1', port });
    await waitForRedis(port);
  }
  const sentinelCli = (port: number, args: string[]) =>
    redisCli(['-h', '127.0.0.1', '-p', String(port), ...args]);
  return {
    primary,
    replica,
    sentinels,
    async primaryPort() {
      const out = await sentinelCli(sentinels[0]!.port, [
        'SENTINEL',
        'get-master-addr-by-name',
        SENTINEL_MASTER_NAME,
      ]);
      return Number(out.trim().split('\n')[1]);
    },
    async waitReplicated(timeoutMs = 20_000) {
      await waitFor('replication', timeoutMs, async () => {
        const out = await redisCli(['-h', '127.0.0.1', '-p', String(replica.port), 'INFO', 'replication']);
        return info(out, 'master_link_status') === 'up';
      });
    },
    async waitSentinelsReady(timeoutMs = 30_000) {
      await waitFor('sentinels', timeoutMs, async () => {
        for (const { port } of sentinels) {
          const out = await sentinelCli(port, ['SENTINEL', 'master', SENTINEL_MASTER_NAME]);
          const lines = out.trim().split('\n');
          const field = (name: string) => lines[lines.indexOf(name) + 1];
          if (field('num-slaves') !== '1' || field('num-other-sentinels') !== '2') return false;
        }
        return true;
      });
    },
    async stop() {
      for (const { child, dir } of children) {
        if (child.exitCode === null && child.signalCode === null) {
          const done = new Promise<void>((r) => child.once('exit', () => r()));
          child.kill('SIGTERM');
          const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
          await done;
          clearTimeout(timer);
        }
        rmSync(dir, { recursive: true, force: true });
      }
      await replica.stop();
      await primary.stop();
    },
  };
}
