/**
 * The rate limit service's cost per call, in one run:
 * - cost: at 1, 16 and 64 calls in flight (`--in-flight`), sluice-server (the built bin, a child
 *   process, `--workers` processes) against a grpc-js server answering OK from the same protos
 *   (servers/rls-trivial.mjs), rounds alternated: calls/s, server CPU per call (/proc, every process
 *   of the service), Redis CPU per call (INFO cpu) and Redis commands per call (INFO stats, the
 *   script's own commands included);
 * - redis: at 1 and 64 in flight from the bench process, so that both run at the rates Redis alone
 *   allows: envoyproxy/ratelimit's exact Redis traffic for the same descriptors replayed (one ioredis
 *   pipeline of INCRBY + EXPIRE per descriptor per call) beside sluice-server's own Redis traffic
 *   (its store's `decide` of the service's counter key and compiled rule: one script call per
 *   decision at 1 in flight, batched at 64): Redis CPU per decision (INFO cpu) and Redis command
 *   time per decision (INFO commandstats).
 * Redis's idle CPU (its timers, measured for 2 s without traffic) is taken off every Redis figure:
 * at 1 in flight on a loaded machine a call rate of a few hundred per second would otherwise charge
 * each call a share of Redis's background work. One fixed-window rule far above the load, keys
 * uniform over 10k tenants, every call allowed. 127.0.0.1 only; starts its own redis-server.
 *
 *   node suites/rls-cost.mjs [--in-flight 1,16,64] [--rounds 3] [--duration-s 3] [--workers 1]
 *                            [--sections cost,redis] [--base-bin PATH] [--out FILE]
 *
 * `--base-bin` adds an earlier build of sluice-server (its packages/server/dist/bin.js) to every
 * round: before and after in one run.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { definePolicy } from '@sluice/core';
import { createRedisStore } from '@sluice/core/node';
import { counterKey } from '@sluice/server';
import Redis from 'ioredis';
import { startRedis } from '../../test/support/redis-server.js';
import { closedLoop, grpcCaller, treeCpuSeconds } from '../lib/rls-clients.mjs';
import { median } from '../lib/stats.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const { values: opts } = parseArgs({
  options: {
    'in-flight': { type: 'string', default: '1,16,64' },
    rounds: { type: 'string', default: '3' },
    'duration-s': { type: 'string', default: '3' },
    workers: { type: 'string', default: '1' },
    sections: { type: 'string', default: 'cost,redis' },
    // Another build's bin (a checkout of an earlier commit), measured beside this one's in each round.
    'base-bin': { type: 'string' },
    out: { type: 'string' },
  },
});
const inFlights = opts['in-flight'].split(',').map(Number);
const rounds = Number(opts.rounds);
const durationMs = 1000 * Number(opts['duration-s']);
const sections = new Set(opts.sections.split(','));
const UNIT_S = 3600;
const CONFIG =
  'domain: bench\ndescriptors:\n  - key: tenant\n    rate_limit: { unit: hour, requests_per_unit: 1000000000 }\n';

/** Starts `script` in a child Node process until it prints `listening on grpc <port>`. */
async function spawnGrpcServer(script, env) {
  const child = spawn(process.execPath, [script], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  const port = await new Promise((resolve, reject) => {
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const match = /listening on grpc (\d+)/.exec(out);
      if (match) resolve(Number(match[1]));
    });
    child.once('exit', () => reject(new Error(`${script} exited:\n${out}`)));
  });
  const stop = async () => {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  };
  const cpuSeconds = () => treeCpuSeconds(child.pid);
  return { port, cpuSeconds, stop };
}

async function startService(redisPort, workers, bin) {
  const root = mkdtempSync(join(tmpdir(), 'sluice-bench-rls-cost-'));
  mkdirSync(join(root, 'rls', 'config'), { recursive: true });
  writeFileSync(join(root, 'rls', 'config', 'bench.yaml'), CONFIG);
  const server = await spawnGrpcServer(bin, {
    PATH: process.env.PATH,
    HOST: '127.0.0.1',
    PORT: '0',
    GRPC_PORT: '0',
    RUNTIME_ROOT: root,
    RUNTIME_SUBDIRECTORY: 'rls',
    REDIS_URL: `127.0.0.1:${redisPort}`,
    SLUICE_TIMEOUT_MS: '1000',
    SLUICE_WORKERS: String(workers),
  });
  return {
    ...server,
    stop: async () => {
      await server.stop();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/** envoyproxy/ratelimit's Redis traffic for one descriptor: a pipeline of INCRBY and EXPIRE. */
function referenceCaller(redisUrl) {
  const client = new Redis(redisUrl);
  const call = async (tenant) => {
    // The reference's key: prefix, domain, entries, then the window's start in seconds.
    const windowStart = Math.floor(Date.now() / 1000 / UNIT_S) * UNIT_S;
    const key = `bench_tenant_t${tenant}_${windowStart}`;
    const replies = await client.pipeline().incrby(key, 1).expire(key, UNIT_S).exec();
    if (replies[0][0] !== null) throw replies[0][0];
  };
  return { call, close: () => client.quit() };
}

/** sluice-server's Redis traffic for one descriptor: its store's decide of the counter and the rule. */
function sluiceStoreCaller(redisUrl) {
  const store = createRedisStore(redisUrl);
  const policy = definePolicy({
    name: 'rule-0',
    algorithm: 'fixed-window',
    limit: 1_000_000_000,
    window: '1h',
  });
  const call = async (tenant) => {
    const key = counterKey('sluice-rls', 'bench', [{ key: 'tenant', value: `t${tenant}` }]);
    const [verdict] = await store.decide([{ key, policy, cost: 1 }], 'consume');
    if (!verdict.allowed) throw new Error('unexpected denial');
  };
  return { call, close: () => store.close() };
}

/** Redis's own CPU seconds (INFO, every thread), commands processed and command time (µs) so far. */
async function redisCounters(admin) {
  const info = await admin.info('all');
  const field = (name) => Number(new RegExp(`^${name}:([0-9.]+)`, 'm').exec(info)?.[1]);
  let commandUs = 0;
  for (const match of info.matchAll(/^cmdstat_(?:evalsha|eval|incrby|expire):calls=\d+,usec=(\d+)/gm))
    commandUs += Number(match[1]);
  return {
    cpuS: field('used_cpu_sys') + field('used_cpu_user'),
    commands: field('total_commands_processed'),
    commandUs,
  };
}

/** Redis's CPU seconds per second without traffic. */
async function redisIdleCpuPerS(admin) {
  const before = await redisCounters(admin);
  await new Promise((r) => setTimeout(r, 2000));
  const after = await redisCounters(admin);
  return (after.cpuS - before.cpuS) / 2;
}

/** One closed loop with the CPU of the server (when given) and of Redis, per call. */
async function measured(call, concurrency, server, admin, idlePerS) {
  const cpuBefore = server?.cpuSeconds() ?? 0;
  const redisBefore = await redisCounters(admin);
  const { calls, seconds } = await closedLoop(call, durationMs, concurrency);
  const redisAfter = await redisCounters(admin);
  const serverCpuS = server === undefined ? Number.NaN : server.cpuSeconds() - cpuBefore;
  return {
    rate: calls / seconds,
    serverUs: (1e6 * serverCpuS) / calls,
    redisUs: (1e6 * Math.max(0, redisAfter.cpuS - redisBefore.cpuS - idlePerS * seconds)) / calls,
    // The INFO call itself is one command.
    commands: (redisAfter.commands - redisBefore.commands - 1) / calls,
    commandUs: (redisAfter.commandUs - redisBefore.commandUs) / calls,
  };
}

const redis = await startRedis();
const admin = new Redis(redis.url);
const loadStart = loadavg()[0];
const idlePerS = await redisIdleCpuPerS(admin);
const workerCounts = opts.workers.split(',').map(Number);

const cost = [];
if (sections.has('cost')) {
  const trivialServer = await spawnGrpcServer(join(here, '..', 'servers', 'rls-trivial.mjs'), {
    PATH: process.env.PATH,
  });
  const bins = { sluice: join(here, '..', '..', 'packages', 'server', 'dist', 'bin.js') };
  if (opts['base-bin'] !== undefined) bins.base = opts['base-bin'];
  for (const workers of workerCounts) {
    const connections = Math.max(1, workers) * 2;
    const servers = { trivial: trivialServer };
    for (const [name, bin] of Object.entries(bins))
      servers[name] = await startService(redis.port, workers, bin);
    const callers = Object.fromEntries(
      Object.entries(servers).map(([name, server]) => [name, grpcCaller(server.port, connections)]),
    );
    // Warm each (connections, the script, JIT).
    for (const caller of Object.values(callers)) await closedLoop(caller.call, 1000, 16);
    const names = Object.keys(callers);
    for (const concurrency of inFlights) {
      const runs = Object.fromEntries(names.map((name) => [name, []]));
      for (let round = 0; round < rounds; round++) {
        // Each round starts with the next server.
        const order = names.map((_, i) => names[(i + round) % names.length]);
        for (const name of order)
          runs[name].push(await measured(callers[name].call, concurrency, servers[name], admin, idlePerS));
      }
      cost.push({ workers, concurrency, runs });
    }
    for (const caller of Object.values(callers)) caller.close();
    for (const name of Object.keys(bins)) await servers[name].stop();
  }
  await trivialServer.stop();
}

const reference = [];
if (sections.has('redis')) {
  const callers = { sluice: sluiceStoreCaller(redis.url), reference: referenceCaller(redis.url) };
  for (const caller of Object.values(callers)) await closedLoop(caller.call, 1000, 16);
  for (const concurrency of [1, 64]) {
    const runs = { sluice: [], reference: [] };
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? ['sluice', 'reference'] : ['reference', 'sluice'];
      for (const name of order)
        runs[name].push(await measured(callers[name].call, concurrency, undefined, admin, idlePerS));
    }
    reference.push({ concurrency, runs });
  }
  for (const caller of Object.values(callers)) await caller.close();
}
await admin.quit();
await redis.stop();

const fmt = (n) => (n >= 1000 ? `${(n / 1000).toFixed(1)}k` : n.toFixed(0));
const us = (n) => (Number.isFinite(n) ? n.toFixed(1) : '-');
const med = (runs, field) => median(runs.map((r) => r[field]));
const costRow = ({ workers, concurrency, runs }) => {
  const s = (field) => med(runs.sluice, field);
  const t = (field) => med(runs.trivial, field);
  const base =
    runs.base === undefined
      ? ''
      : ` ${us(med(runs.base, 'serverUs'))} (${(med(runs.base, 'serverUs') / t('serverUs')).toFixed(2)}x) |`;
  return `| ${workers} | ${concurrency} | ${fmt(s('rate'))} | ${us(s('serverUs'))} | ${fmt(t('rate'))} | ${us(t('serverUs'))} | ${(s('serverUs') / t('serverUs')).toFixed(2)}x |${base} ${us(s('redisUs'))} | ${s('commands').toFixed(2)} |`;
};
const referenceRow = ({ concurrency, runs }) => {
  const s = (field) => med(runs.sluice, field);
  const r = (field) => med(runs.reference, field);
  return `| ${concurrency} | ${fmt(s('rate'))} | ${us(s('redisUs'))} | ${us(s('commandUs'))} | ${s('commands').toFixed(2)} | ${fmt(r('rate'))} | ${us(r('redisUs'))} | ${us(r('commandUs'))} | ${(s('redisUs') / r('redisUs')).toFixed(2)}x | ${(s('commandUs') / r('commandUs')).toFixed(2)}x |`;
};
const lines = [
  `# Rate limit service: cost per call (${new Date().toISOString().slice(0, 16)}Z)`,
  '',
  `${cpus().length} cores, load ${loadStart.toFixed(2)} at start, ${loadavg()[0].toFixed(2)} at the end; one Redis (idle CPU ${us(idlePerS * 1e6)} µs/s, taken off); the client in the bench process; ${durationMs / 1000} s per measurement, ${rounds} rounds alternated, medians.`,
  '',
  ...(cost.length === 0
    ? []
    : [
        `| workers | in flight | sluice-server calls/s | server µs CPU per call | trivial server calls/s | trivial µs CPU per call | sluice / trivial |${opts['base-bin'] === undefined ? '' : ' base build: server µs CPU per call (/ trivial) |'} Redis µs CPU per call | Redis commands per call |`,
        `| --- | --- | --- | --- | --- | --- | --- |${opts['base-bin'] === undefined ? '' : ' --- |'} --- | --- |`,
        ...cost.map(costRow),
        '',
      ]),
  ...(reference.length === 0
    ? []
    : [
        "| in flight | sluice's store: decisions/s | Redis µs CPU per decision | Redis command µs per decision | Redis commands per decision | reference INCRBY+EXPIRE: decisions/s | Redis µs CPU per decision | Redis command µs per decision | CPU ratio | command-time ratio |",
        '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
        ...reference.map(referenceRow),
        '',
      ]),
];
const text = lines.join('\n');
console.log(text);
if (opts.out) writeFileSync(opts.out, text);
