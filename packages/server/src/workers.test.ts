/**
 * `SLUICE_WORKERS`: the real bin as a primary and two worker processes on one real redis-server,
 * asked by real grpc-js clients over several connections: one limit exactly across workers, a
 * reload reaching every worker, `/metrics` summing every worker in one scrape, a killed worker
 * replaced, SIGTERM draining all; and the setting's bad values refused at start.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisProcess, startRedis } from '../../../test/support/redis-server.js';
import {
  descriptor,
  inOneMinuteWindow,
  type RlsClient,
  type RuntimeDir,
  rlsClient,
  runtimeDir,
  type ServerProcess,
  sample,
  serviceEnv,
  spawnServer,
} from './harness.test-support.js';
import { readWorkerCount } from './settings.js';

const CONFIG = `
domain: w
descriptors:
  - key: exact
    rate_limit: { unit: minute, requests_per_unit: 10 }
  - key: counted
    rate_limit: { unit: hour, requests_per_unit: 1000 }
  - key: reloaded
    rate_limit: { unit: hour, requests_per_unit: 5 }
  - key: bulk
    rate_limit: { unit: hour, requests_per_unit: 100000 }
`;

let redis: RedisProcess;
const servers: ServerProcess[] = [];
const dirs: RuntimeDir[] = [];
const clients: RlsClient[] = [];

beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  for (const client of clients) client.close();
  await Promise.all(servers.map((server) => server.stop('SIGKILL')));
  await redis?.stop();
  for (const dir of dirs) dir.remove();
});

async function spawnWorkers(prefix: string, extra: Record<string, string> = {}): Promise<ServerProcess> {
  const dir = runtimeDir({ 'w.yaml': CONFIG });
  dirs.push(dir);
  const env = { REDIS_URL: `127.0.0.1:${redis.port}`, CACHE_KEY_PREFIX: prefix, SLUICE_TIMEOUT_MS: '5000' };
  const server = await spawnServer(serviceEnv(dir, { ...env, SLUICE_WORKERS: '2', ...extra }));
  servers.push(server);
  return server;
}

/** `n` clients, each on a connection of its own (the primary hands connections to workers in turn). */
function connections(port: number, n: number): RlsClient[] {
  const made = Array.from({ length: n }, () => rlsClient(port, { 'grpc.use_local_subchannel_pool': 1 }));
  clients.push(...made);
  return made;
}

const ask = (client: RlsClient, pair: string) =>
  client.shouldRateLimit({ domain: 'w', descriptors: [descriptor(pair)] });

/** GET /metrics on a connection of its own. */
function scrape(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/metrics', agent: false }, (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => {
        text += chunk.toString();
      });
      res.on('end', () => resolve(text));
    });
    req.on('error', reject);
    req.end();
  });
}

/** The pids of the workers the primary says it started and that have not exited since. */
function workerPids(output: string): number[] {
  const started = [...output.matchAll(/worker \d+ \(pid (\d+)\) started/g)].map((m) => Number(m[1]));
  const exited = new Set([...output.matchAll(/worker \d+ \(pid (\d+)\) exited/g)].map((m) => Number(m[1])));
  return started.filter((pid) => !exited.has(pid));
}

/**
 * The pids among `pids` holding an accepted connection on local `port` (Linux /proc): where the
 * primary handed the connections.
 */
function holdingConnections(pids: readonly number[], port: number): number[] {
  const hexPort = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  const inodes = new Set(
    readFileSync('/proc/net/tcp', 'utf8')
      .split('\n')
      .map((line) => line.trim().split(/\s+/))
      .filter((cols) => cols[1]?.endsWith(hexPort) && cols[3] === '01')
      .map((cols) => cols[9]),
  );
  return pids.filter((pid) =>
    readdirSync(`/proc/${pid}/fd`).some((fd) => {
      const target = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`, { encoding: 'utf8' }));
      return target !== null && inodes.has(target[1]);
    }),
  );
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('SLUICE_WORKERS=2 on a real redis-server', () => {
  let server: ServerProcess;
  let conns: RlsClient[];
  beforeAll(async () => {
    server = await spawnWorkers('workers:');
    conns = connections(server.grpcPort, 6);
    // Every connection once, so no call below pays for a connection or a script load.
    await Promise.all(conns.map((client) => ask(client, 'bulk=warm')));
  });

  it('the primary hands connections to both workers', () => {
    const pids = workerPids(server.output());
    expect(holdingConnections(pids, server.grpcPort).sort()).toEqual([...pids].sort());
  });

  it('one limit exactly across workers: 60 concurrent calls on 6 connections, limit 10, exactly 10 OK', async () => {
    await inOneMinuteWindow();
    const replies = await Promise.all(
      Array.from({ length: 60 }, (_, i) => ask(conns[i % conns.length] as RlsClient, 'exact=e1')),
    );
    expect(replies.filter((r) => r.overall_code === 'OK')).toHaveLength(10);
    expect(replies.filter((r) => r.overall_code === 'OVER_LIMIT')).toHaveLength(50);
  });

  it('/metrics is one scrape for all workers: every scrape sums both', async () => {
    await Promise.all(
      Array.from({ length: 24 }, (_, i) => ask(conns[i % conns.length] as RlsClient, 'counted=c')),
    );
    for (let i = 0; i < 4; i++) {
      const text = await scrape(server.httpPort);
      expect(sample(text, 'ratelimit_service_rate_limit_total_hits{domain="w",rule="counted"}')).toBe(24);
      // Each worker loaded the config once.
      expect(sample(text, 'ratelimit_service_config_load_success')).toBe(2);
      // The limiters' own series, summed the same way (`counted` is the config's second rule).
      expect(sample(text, 'sluice_decisions_total{policy="rule-1",outcome="allowed"}')).toBe(24);
      expect(sample(text, 'sluice_store_errors_total{cause="timeout"}')).toBe(0);
      expect(sample(text, 'sluice_breaker_open')).toBe(0);
    }
    // Both workers answered some of them: the sum is over processes, not one worker's count.
    const calls = sample(await scrape(server.httpPort), 'sluice_store_calls_total') as number;
    expect(calls).toBeGreaterThanOrEqual(24 + 6 + 60);
    const limiterLines = (await scrape(server.httpPort))
      .split('\n')
      .filter((line) => /^(# (HELP|TYPE) )?sluice_/.test(line) && !/sluice_quota_/.test(line));
    expect(limiterLines).toContain('# TYPE sluice_store_duration_seconds histogram');
    const check = spawnSync('promtool', ['check', 'metrics'], {
      input: `${limiterLines.join('\n')}\n`,
      encoding: 'utf8',
    });
    expect(`${check.stdout}${check.stderr}`).toBe('');
    expect(check.status).toBe(0);
  });

  it('a config reload reaches every worker', async () => {
    const dir = dirs[0] as RuntimeDir;
    dir.write('w.yaml', CONFIG.replace('requests_per_unit: 5', 'requests_per_unit: 7'));
    await server.waitFor(/worker 1 \(pid \d+\): config reloaded/);
    await server.waitFor(/worker 2 \(pid \d+\): config reloaded/);
    const replies = await Promise.all(conns.map((client) => ask(client, 'reloaded=r')));
    expect(replies.map((r) => r.statuses[0]?.current_limit?.requests_per_unit)).toEqual([7, 7, 7, 7, 7, 7]);
  });

  it('a worker that dies is replaced and logged; the service answers throughout', async () => {
    const [victim] = workerPids(server.output());
    process.kill(victim as number, 'SIGKILL');
    await server.waitFor(
      new RegExp(`worker \\d+ \\(pid ${victim}\\) exited on SIGKILL; starting a replacement`),
    );
    await server.waitFor(/worker 3 \(pid \d+\): listening on grpc/);
    const pids = workerPids(server.output());
    expect(pids).toHaveLength(2);
    expect(pids.every(alive)).toBe(true);
    const fresh = connections(server.grpcPort, 4);
    const replies = await Promise.all(fresh.map((client) => ask(client, 'bulk=after')));
    expect(replies.every((r) => r.overall_code === 'OK')).toBe(true);
    // Logs name workers and pids, never what a client sent.
    expect(server.output()).not.toMatch(/after|warm|e1/);
  });
});

describe('SIGTERM to the primary', () => {
  it('drains every worker in the middle of traffic: each call answered or refused, nothing charged lost, exit 0', async () => {
    const server = await spawnWorkers('term:', { SLUICE_TIMEOUT_MS: '10000' });
    const conns = connections(server.grpcPort, 4);
    const outcomes: string[] = [];
    const calls: Promise<void>[] = [];
    const fire = (i: number): void => {
      calls.push(
        ask(conns[i % conns.length] as RlsClient, 'bulk=term').then(
          (reply) => void outcomes.push(reply.overall_code),
          (error: { code?: number }) => void outcomes.push(`error ${error.code}`),
        ),
      );
    };
    let n = 0;
    const timer = setInterval(() => {
      for (let i = 0; i < 4; i++) fire(n++);
    }, 5);
    while (outcomes.filter((o) => o === 'OK').length < 20) await new Promise((r) => setTimeout(r, 10));
    const pids = workerPids(server.output());
    const exit = server.stop('SIGTERM');
    await new Promise((r) => setTimeout(r, 100));
    clearInterval(timer);
    expect(await exit).toBe(0);
    await Promise.all(calls);
    expect(pids.filter(alive)).toEqual([]);
    expect(server.output().match(/worker \d+ \(pid \d+\): stopped/g)).toHaveLength(2);
    const ok = outcomes.filter((o) => o === 'OK').length;
    expect([...new Set(outcomes)].filter((o) => o !== 'OK' && o !== 'error 14')).toEqual([]);
    // Every charge in Redis was answered OK: a one-process witness looks at the counter.
    const dir = dirs.at(-1) as RuntimeDir;
    const witness = await spawnServer(
      serviceEnv(dir, { REDIS_URL: `127.0.0.1:${redis.port}`, CACHE_KEY_PREFIX: 'term:' }),
    );
    servers.push(witness);
    const look = await rlsClient(witness.grpcPort).shouldRateLimit({
      domain: 'w',
      descriptors: [{ ...descriptor('bulk=term'), hits_addend: { value: '0' } }],
    });
    expect(look.statuses[0]?.limit_remaining).toBe(100_000 - ok);
  });
});

describe('SLUICE_WORKERS at start', () => {
  it('defaults to the available parallelism on Redis and to 1 on the memory store', () => {
    expect(readWorkerCount({ redisUrl: 'redis://127.0.0.1:6379' }, {}, 8)).toBe(8);
    expect(readWorkerCount({ redisUrl: undefined }, {}, 8)).toBe(1);
    expect(readWorkerCount({ redisUrl: 'redis://127.0.0.1:6379' }, { SLUICE_WORKERS: '1' }, 8)).toBe(1);
  });

  it.each([
    ['0', /SLUICE_WORKERS must be an integer from 1 to 256, got "0"/],
    ['two', /SLUICE_WORKERS must be an integer from 1 to 256, got "two"/],
    ['1.5', /SLUICE_WORKERS must be an integer from 1 to 256, got "1.5"/],
  ])('refuses %s naming the variable and the value', (value, message) => {
    expect(() => readWorkerCount({ redisUrl: 'redis://127.0.0.1:6379' }, { SLUICE_WORKERS: value })).toThrow(
      message,
    );
  });

  it('refuses several workers on the memory store (each would count alone)', () => {
    expect(() => readWorkerCount({ redisUrl: undefined }, { SLUICE_WORKERS: '2' })).toThrow(
      /SLUICE_WORKERS above 1 needs REDIS_URL .*, got "2"/,
    );
  });

  it('the bin exits 1 naming SLUICE_WORKERS and the value', async () => {
    const dir = runtimeDir({ 'w.yaml': CONFIG });
    dirs.push(dir);
    await expect(
      spawnServer(serviceEnv(dir, { REDIS_URL: `127.0.0.1:${redis.port}`, SLUICE_WORKERS: '-1' })),
    ).rejects.toThrow(
      /cannot start: sluice-server: SLUICE_WORKERS must be an integer from 1 to 256, got "-1"/,
    );
  });

  it('a bad config file stops a start with workers once, in the primary (exit 1, no worker forked)', async () => {
    const dir = runtimeDir({
      'bad.yaml':
        'domain: d\ndescriptors:\n  - key: a\n    rate_limit: { unit: fortnight, requests_per_unit: 3 }',
    });
    dirs.push(dir);
    const failed = spawnServer(
      serviceEnv(dir, { REDIS_URL: `127.0.0.1:${redis.port}`, SLUICE_WORKERS: '2' }),
    );
    await expect(failed).rejects.toThrow(/cannot start: .*bad\.yaml, domain "d", descriptor "a"/);
    await expect(failed).rejects.not.toThrow(/started/);
  });
});
