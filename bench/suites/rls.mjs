/**
 * Rate limit service suite: Envoy's ShouldRateLimit over gRPC to sluice-server
 * (packages/server/dist/bin.js, a child process) with `--workers` worker processes (each count
 * measured in turn: `1` one process, `2` a primary and two workers) against the same policy decided
 * in-process by `limiter.check` on the same Redis. The gRPC client spreads its calls over
 * `--connections` connections (the primary hands connections, not calls, to workers). Keys uniform
 * over 10k tenants, every call allowed (a fixed window far above the load).
 * - closed loop: `--in-flight` calls outstanding for `--duration-s`, rounds alternated: decisions/s,
 *   the ratio gRPC / in-process per round, and the server's calls per CPU-second (all its processes);
 * - open loop: fixed arrival rates in tiers, latency from each call's due time (no coordinated
 *   omission): p50/p99 and the share answered, for both.
 * 127.0.0.1 only; starts its own redis-server unless `--redis-url`.
 *
 *   node suites/rls.mjs [--redis-url URL] [--quick] [--tiers 1000,2000,5000] [--rounds 3] [--workers 1,2]
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createLimiter } from '@sluice/core';
import { createRedisStore } from '@sluice/core/node';
import { startRedis } from '../../test/support/redis-server.js';
import { closedLoop, grpcCaller, treeCpuSeconds } from '../lib/rls-clients.mjs';
import { median, quantileSorted } from '../lib/stats.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const { values: opts } = parseArgs({
  options: {
    'redis-url': { type: 'string' },
    quick: { type: 'boolean', default: false },
    tiers: { type: 'string' },
    rounds: { type: 'string' },
    'duration-s': { type: 'string' },
    'in-flight': { type: 'string', default: '256' },
    workers: { type: 'string', default: '1,2' },
    connections: { type: 'string', default: '4' },
    out: { type: 'string' },
  },
});
const quick = opts.quick;
const tiers = (opts.tiers ?? (quick ? '250,1000' : '250,500,1000,2000,5000')).split(',').map(Number);
const rounds = Number(opts.rounds ?? (quick ? 1 : 3));
const durationMs = 1000 * Number(opts['duration-s'] ?? (quick ? 1 : 3));
const inFlight = Number(opts['in-flight']);
const workerCounts = opts.workers.split(',').map(Number);
const connections = Number(opts.connections);
const TENANTS = 10_000;
const CONFIG =
  'domain: bench\ndescriptors:\n  - key: tenant\n    rate_limit: { unit: hour, requests_per_unit: 1000000000 }\n';
const POLICY = { name: 'tenant', algorithm: 'fixed-window', limit: 1_000_000_000, window: '1h' };

async function startService(redisPort, workers) {
  const root = mkdtempSync(join(tmpdir(), 'sluice-bench-rls-'));
  mkdirSync(join(root, 'rls', 'config'), { recursive: true });
  writeFileSync(join(root, 'rls', 'config', 'bench.yaml'), CONFIG);
  const bin = join(here, '..', '..', 'packages', 'server', 'dist', 'bin.js');
  const env = { PATH: process.env.PATH, HOST: '127.0.0.1', PORT: '0', GRPC_PORT: '0', RUNTIME_ROOT: root };
  const child = spawn(process.execPath, [bin], {
    env: {
      ...env,
      RUNTIME_SUBDIRECTORY: 'rls',
      REDIS_URL: `127.0.0.1:${redisPort}`,
      SLUICE_TIMEOUT_MS: '1000',
      SLUICE_WORKERS: String(workers),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  const port = await new Promise((resolve, reject) => {
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const match = /^sluice-server: listening on grpc (\d+)/m.exec(out);
      if (match) resolve(Number(match[1]));
    });
    child.once('exit', () => reject(new Error(`sluice-server exited:\n${out}`)));
  });
  const stop = async () => {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
    rmSync(root, { recursive: true, force: true });
  };
  /** CPU seconds of the service's processes (primary and workers). */
  const cpuSeconds = () => treeCpuSeconds(child.pid);
  return { port, cpuSeconds, stop };
}

function inProcessCaller(redisUrl) {
  const store = createRedisStore(redisUrl);
  const limiter = createLimiter({ store, policies: [POLICY], timeoutMs: 1000, denyCache: false });
  const call = async (tenant) => {
    const decision = await limiter.check({ identity: `t${tenant}` });
    if (!decision.allowed) throw new Error(`unexpected ${decision.outcome}`);
  };
  return { call, close: () => store.close() };
}

/** Calls due at `rate` per second for `ms`: latency from each due time, and the share answered. */
async function openLoop(call, rate, ms) {
  const total = Math.round((rate * ms) / 1000);
  const latencies = [];
  let failed = 0;
  const pending = [];
  const start = performance.now();
  for (let i = 0; i < total; i++) {
    const due = start + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    // From the due time when sent late; from the send when sent up to 1 ms early.
    const from = Math.min(due, performance.now());
    pending.push(
      call(i % TENANTS).then(
        () => latencies.push(performance.now() - from),
        () => failed++,
      ),
    );
  }
  await Promise.all(pending);
  latencies.sort((a, b) => a - b);
  return {
    p50: quantileSorted(latencies, 0.5),
    p99: quantileSorted(latencies, 0.99),
    answered: latencies.length / total,
    failed,
  };
}

/** Closed-loop rounds (alternated with the in-process limiter) and open-loop tiers, on `workers`. */
async function measure(workers, local) {
  const service = await startService(Number(new URL(redisUrl).port), workers);
  const grpc = grpcCaller(service.port, connections);
  // Warm both paths (connections, scripts, JIT).
  await closedLoop(grpc.call, 1000, inFlight);
  await closedLoop(local.call, 1000, inFlight);
  const closed = [];
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? ['grpc', 'local'] : ['local', 'grpc'];
    const row = {};
    for (const name of order) {
      const cpuBefore = service.cpuSeconds();
      row[name] = (await closedLoop(name === 'grpc' ? grpc.call : local.call, durationMs, inFlight)).rate;
      if (name === 'grpc') row.serverCpuS = service.cpuSeconds() - cpuBefore;
    }
    row.ratio = row.grpc / row.local;
    row.callsPerCoreS = (row.grpc * durationMs) / 1000 / row.serverCpuS;
    closed.push(row);
  }
  const open = [];
  for (const rate of tiers) {
    open.push({
      rate,
      grpc: await openLoop(grpc.call, rate, durationMs),
      local: await openLoop(local.call, rate, durationMs),
    });
  }
  grpc.close();
  await service.stop();
  return { workers, closed, open };
}

const redis = opts['redis-url'] ? undefined : await startRedis();
const redisUrl = opts['redis-url'] ?? redis.url;
const local = inProcessCaller(redisUrl);
const loadStart = loadavg()[0];
const runs = [];
for (const workers of workerCounts) runs.push(await measure(workers, local));
await local.close();
await redis?.stop();

const fmt = (n) => (n >= 1000 ? `${(n / 1000).toFixed(1)}k` : n.toFixed(0));
const ms = (n) => (Number.isFinite(n) ? n.toFixed(2) : '-');
const section = ({ workers, closed, open }) => [
  `## SLUICE_WORKERS=${workers}`,
  '',
  '| round | gRPC decisions/s | in-process decisions/s | ratio | server calls per CPU-second |',
  '| --- | --- | --- | --- | --- |',
  ...closed.map(
    (r, i) =>
      `| ${i + 1} | ${fmt(r.grpc)} | ${fmt(r.local)} | ${r.ratio.toFixed(2)}x | ${fmt(r.callsPerCoreS)} |`,
  ),
  `| median | ${fmt(median(closed.map((r) => r.grpc)))} | ${fmt(median(closed.map((r) => r.local)))} | ${median(closed.map((r) => r.ratio)).toFixed(2)}x | ${fmt(median(closed.map((r) => r.callsPerCoreS)))} |`,
  '',
  '| offered/s | gRPC p50 ms | gRPC p99 ms | gRPC answered | in-process p50 ms | in-process p99 ms | in-process answered |',
  '| --- | --- | --- | --- | --- | --- | --- |',
  ...open.map(
    (t) =>
      `| ${fmt(t.rate)} | ${ms(t.grpc.p50)} | ${ms(t.grpc.p99)} | ${(100 * t.grpc.answered).toFixed(1)}% | ${ms(t.local.p50)} | ${ms(t.local.p99)} | ${(100 * t.local.answered).toFixed(1)}% |`,
  ),
  '',
];
const lines = [
  `# Rate limit service: gRPC ShouldRateLimit vs in-process limiter.check (${new Date().toISOString().slice(0, 10)})`,
  '',
  `${cpus().length} cores, load ${loadStart.toFixed(2)} at start, ${loadavg()[0].toFixed(2)} at the end; sluice-server with ${workerCounts.join(', then ')} worker(s), one Redis, the client in the bench process over ${connections} connections; ${inFlight} in flight (closed loop), ${durationMs / 1000} s per measurement.`,
  '',
  ...runs.flatMap(section),
];
const text = lines.join('\n');
console.log(text);
if (opts.out) writeFileSync(opts.out, text);
