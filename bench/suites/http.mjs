/**
 * HTTP suite: each framework without a limiter (baseline), with Sluice's adapter, and with the
 * limiter its users usually pick, on the memory store and on Redis, allowed path (10k random
 * identities) and deny path (one identity over its quota). Servers run in child processes;
 * autocannon runs here; everything on 127.0.0.1. Rounds alternate the variants (rotated order)
 * and ratios are taken within a round against that round's baseline.
 *
 *   node suites/http.mjs --redis-url URL [--quick] [--only express,koa] [--rounds N] [--duration-s S]
 *        [--prof-dir DIR] [--out file.json]
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import {
  IDENTITIES,
  loadLimited,
  startServerProcess,
  stopServerProcess as stopServer,
} from '../lib/http-server.mjs';
import { redisCpuSeconds } from '../lib/redis-cpu.mjs';
import { median } from '../lib/stats.mjs';

const { values: opts } = parseArgs({
  options: {
    'redis-url': { type: 'string' },
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
    rounds: { type: 'string' },
    'duration-s': { type: 'string' },
    connections: { type: 'string' },
    'prof-dir': { type: 'string' },
    out: { type: 'string' },
  },
});
const redisUrl = opts['redis-url'];
if (!redisUrl) throw new Error('--redis-url is required');
const ROUNDS = Number(opts.rounds ?? (opts.quick ? 1 : 3));
const DURATION_S = Number(opts['duration-s'] ?? (opts.quick ? 0.5 : 1.2));
const WARMUP_S = opts.quick ? 0.2 : 1;
const CONNECTIONS = Number(opts.connections ?? 32);
const FRAMEWORKS = (opts.only ?? 'express,koa,hono,nest').split(',');

/** The servers of one framework: a name, its command-line options, what it measures. */
const SERVERS = [
  { name: 'baseline', variant: 'baseline', store: 'memory', path: 'allowed' },
  { name: 'sluice memory allowed', variant: 'sluice', store: 'memory', path: 'allowed' },
  { name: 'usual memory allowed', variant: 'usual', store: 'memory', path: 'allowed' },
  { name: 'sluice redis allowed', variant: 'sluice', store: 'redis', path: 'allowed' },
  { name: 'usual redis allowed', variant: 'usual', store: 'redis', path: 'allowed' },
  // Experiment, not a target: the same Sluice server with ioredis auto-pipelining on.
  {
    name: 'sluice redis allowed autopipelining',
    variant: 'sluice',
    store: 'redis',
    path: 'allowed',
    autopipelining: true,
  },
  { name: 'sluice memory deny', variant: 'sluice', store: 'memory', path: 'deny' },
  { name: 'usual memory deny', variant: 'usual', store: 'memory', path: 'deny' },
  { name: 'sluice redis deny', variant: 'sluice', store: 'redis', path: 'deny' },
  { name: 'usual redis deny', variant: 'usual', store: 'redis', path: 'deny' },
];

/** Starts one server process and resolves when it prints its port. */
async function startServer(framework, s) {
  const profile = opts['prof-dir'] && s.variant === 'sluice';
  const nodeArgs = profile
    ? [
        '--cpu-prof',
        '--cpu-prof-dir',
        opts['prof-dir'],
        '--cpu-prof-name',
        `${framework}-${s.name.replaceAll(' ', '-')}.cpuprofile`,
      ]
    : [];
  const args = [
    '--framework',
    framework,
    '--variant',
    s.variant,
    '--store',
    s.store,
    '--path',
    s.path,
    '--redis-url',
    redisUrl,
    ...(s.autopipelining ? ['--autopipelining'] : []),
  ];
  const server = await startServerProcess(args, { nodeArgs, label: `${framework}/${s.name}` });
  return { ...s, port: server.port, child: server.child, stderr: server.output };
}

/** One autocannon run against a server. */
const admin = new Redis(redisUrl);

async function load(server, seconds) {
  const cpuBefore = await redisCpuSeconds(admin);
  const result = await loadLimited({
    port: server.port,
    seconds,
    connections: CONNECTIONS,
    allowed: server.path === 'allowed',
  });
  const codes = Object.fromEntries(
    Object.entries(result.statusCodeStats ?? {}).map(([k, v]) => [k, v.count]),
  );
  const cpuAfter = await redisCpuSeconds(admin);
  return {
    // Redis CPU per request: what the limiter costs on the Redis side (0 for no Redis).
    redisUsPerRequest: ((cpuAfter - cpuBefore) * 1e6) / Math.max(1, result.requests.total),
    perSecond: result.requests.total / (result.duration || seconds),
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    errors: result.errors + result.timeouts,
    codes,
  };
}

const report = [];
for (const framework of FRAMEWORKS) {
  process.stderr.write(`  ${framework}\n`);
  const servers = [];
  try {
    const started = await Promise.allSettled(SERVERS.map((s) => startServer(framework, s)));
    started.forEach((result, i) => {
      if (result.status === 'fulfilled') {
        servers.push(result.value);
      } else {
        const message = String(result.reason?.message ?? result.reason);
        process.stderr.write(
          `    ${SERVERS[i].name}: not started (${message.split('\n').slice(0, 3).join(' ')})\n`,
        );
        report.push({ framework, ...SERVERS[i], pending: message.slice(0, 300) });
      }
    });
    for (const server of servers) await load(server, WARMUP_S);
    const rounds = servers.map(() => []);
    for (let round = 0; round < ROUNDS; round++) {
      for (let k = 0; k < servers.length; k++) {
        const index = (k + round) % servers.length;
        rounds[index].push(await load(servers[index], DURATION_S));
      }
    }
    const baselineIndex = servers.findIndex((s) => s.name === 'baseline');
    servers.forEach((server, i) => {
      const runs = rounds[i];
      const vsBaseline =
        baselineIndex === -1 ? [] : runs.map((r, k) => r.perSecond / rounds[baselineIndex][k].perSecond);
      const codes = {};
      for (const r of runs) for (const [c, n] of Object.entries(r.codes)) codes[c] = (codes[c] ?? 0) + n;
      const row = {
        framework,
        name: server.name,
        variant: server.variant,
        store: server.store,
        path: server.path,
        autopipelining: server.autopipelining === true,
        perSecond: median(runs.map((r) => r.perSecond)),
        perRound: runs.map((r) => r.perSecond),
        p50Ms: median(runs.map((r) => r.p50Ms)),
        p99Ms: median(runs.map((r) => r.p99Ms)),
        redisUsPerRequest: median(runs.map((r) => r.redisUsPerRequest)),
        errors: runs.reduce((t, r) => t + r.errors, 0),
        codes,
        vsBaseline: {
          median: median(vsBaseline),
          min: Math.min(...vsBaseline),
          max: Math.max(...vsBaseline),
        },
      };
      if (server.variant === 'sluice') {
        const usualIndex = servers.findIndex(
          (s) => s.variant === 'usual' && s.store === server.store && s.path === server.path,
        );
        if (usualIndex !== -1) {
          const vsUsual = runs.map((r, k) => r.perSecond / rounds[usualIndex][k].perSecond);
          row.vsUsual = { median: median(vsUsual), min: Math.min(...vsUsual), max: Math.max(...vsUsual) };
        }
      }
      report.push(row);
      process.stderr.write(
        `    ${server.name}: ${Math.round(row.perSecond)} req/s [${row.perRound.map((x) => Math.round(x)).join(' ')}]` +
          ` p50 ${row.p50Ms} ms p99 ${row.p99Ms} ms vs baseline ${row.vsBaseline.median.toFixed(2)}` +
          `${row.vsUsual ? ` vs usual ${row.vsUsual.median.toFixed(2)}` : ''} codes ${JSON.stringify(codes)}${row.errors ? ` errors ${row.errors}` : ''}\n`,
      );
    });
  } finally {
    await Promise.all(servers.map(stopServer));
  }
}

const output = {
  suite: 'http',
  rounds: ROUNDS,
  durationS: DURATION_S,
  connections: CONNECTIONS,
  identities: IDENTITIES.length,
  rows: report,
};
if (opts.out) writeFileSync(opts.out, JSON.stringify(output, null, 2));
else process.stdout.write(`${JSON.stringify(output)}\n`);
await admin.quit();
process.exit(0);
