/**
 * HTTP suite: each framework without a limiter (baseline), with Sluice's adapter, and with the
 * limiter its users usually pick, on the memory store and on Redis, allowed path (10k random
 * identities) and deny path (one identity over its quota). Servers run in child processes;
 * autocannon runs here; everything on 127.0.0.1. Each round measures, for every comparison,
 * the baseline, the Sluice server and the usual limiter back to back (order rotated every
 * round) and takes the ratios within that triple; medians and spreads are over rounds. Each
 * run also records CPU per request of the server process, of Redis and of the load generator, and
 * script calls Redis ran per 2xx answer. The lease comparisons (`--groups lease`) put Sluice with
 * a leased policy on Redis beside the same adapter on the memory store, on Redis unleased and the
 * usual limiter on Redis, for three key distributions of the allowed path (uniform over 10k,
 * Zipf over 10k, one hot identity).
 *
 *   node suites/http.mjs [--redis-url URL] [--quick] [--only express,koa] [--rounds N] [--duration-s S]
 *        [--groups main,lease] [--prof-dir DIR] [--out file.json] [--lease-md file.md]
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { startRedis } from '../../test/support/redis-server.js';
import {
  IDENTITIES,
  LEASE_ARGS,
  loadLimited,
  startServerProcess,
  stopServerProcess as stopServer,
} from '../lib/http-server.mjs';
import { LEASE_GROUPS, leaseRowLabel, renderLeaseMarkdown } from '../lib/lease-report.mjs';
import { redisCpuSeconds } from '../lib/redis-cpu.mjs';
import { count2xx, redisScriptCalls } from '../lib/redis-script-calls.mjs';
import { median, spread } from '../lib/stats.mjs';

const { values: opts } = parseArgs({
  options: {
    'redis-url': { type: 'string' },
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
    rounds: { type: 'string' },
    'duration-s': { type: 'string' },
    connections: { type: 'string' },
    'prof-dir': { type: 'string' },
    groups: { type: 'string', default: 'main,lease' },
    'lease-md': { type: 'string' },
    out: { type: 'string' },
  },
});
// Without --redis-url the suite starts its own redis-server (stopped at the end).
const ownRedis = opts['redis-url'] === undefined ? await startRedis() : undefined;
const redisUrl = opts['redis-url'] ?? ownRedis.url;
const ROUNDS = Number(opts.rounds ?? (opts.quick ? 1 : 5));
const DURATION_S = Number(opts['duration-s'] ?? (opts.quick ? 0.5 : 1.2));
const WARMUP_S = opts.quick ? 0.2 : 1;
const CONNECTIONS = Number(opts.connections ?? 32);
const FRAMEWORKS = (opts.only ?? 'express,koa,hono,nest,fastify').split(',');

/** The servers of one framework: a name, its command-line options, what it measures. */
const SERVERS = [
  { name: 'baseline', variant: 'baseline', store: 'memory', path: 'allowed' },
  // Reference, not a target: the same app with one empty middleware (Nest: an always-true guard).
  { name: 'empty middleware', variant: 'noop', store: 'memory', path: 'allowed' },
  // Reference, not a target: an empty middleware that awaits one resolved promise (Nest: an async guard).
  { name: 'async empty middleware', variant: 'noop-async', store: 'memory', path: 'allowed' },
  // Reference, not a target: a middleware answering every request with Sluice's deny-path 429
  // (Nest: a guard throwing it), deciding nothing: what the deny path's answer alone costs.
  { name: 'fixed 429 middleware', variant: 'fixed-429', store: 'memory', path: 'deny' },
  { name: 'sluice memory allowed', variant: 'sluice', store: 'memory', path: 'allowed' },
  { name: 'usual memory allowed', variant: 'usual', store: 'memory', path: 'allowed' },
  { name: 'sluice redis allowed', variant: 'sluice', store: 'redis', path: 'allowed' },
  // The same Sluice server with a leased policy (LEASE_ARGS: 100 units for 1 s).
  { name: 'sluice leased allowed', variant: 'sluice', store: 'redis', path: 'allowed', lease: true },
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
    ...(s.lease ? LEASE_ARGS : []),
  ];
  const server = await startServerProcess(args, { nodeArgs, label: `${framework}/${s.name}` });
  return { ...s, port: server.port, child: server.child, stderr: server.output };
}

const admin = new Redis(redisUrl);

/** Clock ticks per second of /proc/<pid>/stat (getconf CLK_TCK; 100 on Linux). */
const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** CPU seconds a child process has used so far (Linux /proc), or NaN where there is no /proc. */
function processCpuSeconds(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return Number.NaN;
  }
}

/** One autocannon run against a server (`keys`: the allowed path's key distribution), with the CPU each side spent. */
async function load(server, seconds, keys = 'uniform') {
  const callsBefore = await redisScriptCalls(admin);
  const cpuBefore = await redisCpuSeconds(admin);
  const serverBefore = processCpuSeconds(server.child.pid);
  const loadBefore = process.cpuUsage();
  const result = await loadLimited({
    port: server.port,
    seconds,
    connections: CONNECTIONS,
    allowed: server.path === 'allowed',
    keys,
  });
  const loadCpu = process.cpuUsage(loadBefore);
  const serverAfter = processCpuSeconds(server.child.pid);
  const codes = Object.fromEntries(
    Object.entries(result.statusCodeStats ?? {}).map(([k, v]) => [k, v.count]),
  );
  const cpuAfter = await redisCpuSeconds(admin);
  const scriptCalls = (await redisScriptCalls(admin)) - callsBefore;
  const requests = Math.max(1, result.requests.total);
  return {
    // CPU per request, in µs: the server process, Redis (what the limiter costs on the Redis
    // side; 0 for no Redis) and the load generator (autocannon, in this process).
    redisUsPerRequest: ((cpuAfter - cpuBefore) * 1e6) / requests,
    serverUsPerRequest: ((serverAfter - serverBefore) * 1e6) / requests,
    loadUsPerRequest: (loadCpu.user + loadCpu.system) / requests,
    perSecond: result.requests.total / (result.duration || seconds),
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    errors: result.errors + result.timeouts,
    codes,
    scriptCalls,
    admitted: count2xx(codes),
  };
}

/**
 * The comparisons of one round: each measures the baseline and its servers back to back, so each
 * ratio compares runs seconds apart. The machine's speed drifts over tens of seconds; ratios of
 * runs far apart carry that drift. `ratios`: `[numerator, denominator, field]` taken within the
 * group too (`vsUsual`: Sluice over the usual limiter). `keys`: the allowed path's key
 * distribution (default uniform); a lease group's rows are labelled with it (lease-report.mjs).
 */
const MAIN_GROUPS = [
  { names: ['empty middleware', 'async empty middleware', 'fixed 429 middleware'] },
  ...[
    ['sluice memory allowed', 'usual memory allowed'],
    ['sluice redis allowed', 'usual redis allowed'],
    ['sluice redis allowed autopipelining', 'usual redis allowed'],
    ['sluice memory deny', 'usual memory deny'],
    ['sluice redis deny', 'usual redis deny'],
  ].map((names) => ({ names, ratios: [[names[0], names[1], 'vsUsual']] })),
];
const groupSets = opts.groups.split(',');
for (const g of groupSets) {
  if (g !== 'main' && g !== 'lease') throw new Error(`--groups: each must be main or lease, got ${g}`);
}
const GROUPS = [
  ...(groupSets.includes('main') ? MAIN_GROUPS : []),
  ...(groupSets.includes('lease') ? LEASE_GROUPS : []),
];
const usedNames = new Set(['baseline', ...GROUPS.flatMap((g) => g.names)]);
const label = (name, group) => (group.lease ? leaseRowLabel(name, group.keys) : name);

/** The spread of a server's ratios, or undefined when it has none. */
const spreadOf = (ratios) => (ratios.length === 0 ? undefined : spread(ratios));

const report = [];
for (const framework of FRAMEWORKS) {
  process.stderr.write(`  ${framework}\n`);
  const servers = [];
  try {
    const wanted = SERVERS.filter((s) => usedNames.has(s.name));
    const started = await Promise.allSettled(wanted.map((s) => startServer(framework, s)));
    started.forEach((result, i) => {
      if (result.status === 'fulfilled') {
        servers.push(result.value);
      } else {
        const message = String(result.reason?.message ?? result.reason);
        process.stderr.write(
          `    ${wanted[i].name}: not started (${message.split('\n').slice(0, 3).join(' ')})\n`,
        );
        report.push({ framework, ...wanted[i], pending: message.slice(0, 300) });
      }
    });
    for (const server of servers) await load(server, WARMUP_S);
    const byName = new Map(servers.map((s) => [s.name, s]));
    // One row per label (a server, and in a lease group its key distribution): its runs and ratios.
    const rows = new Map();
    const rowOf = (name, group) => {
      const key = label(name, group);
      if (!rows.has(key))
        rows.set(key, { server: byName.get(name), group, runs: [], ratios: { vsBaseline: [] } });
      return rows.get(key);
    };
    for (let round = 0; round < ROUNDS; round++) {
      for (const group of GROUPS) {
        const names = ['baseline', ...group.names].filter((n) => byName.has(n));
        // Rotate the order every round, so no contender always runs first or last.
        const order = names.slice(round % names.length).concat(names.slice(0, round % names.length));
        const measured = {};
        for (const name of order) {
          const run = await load(byName.get(name), DURATION_S, group.keys);
          rowOf(name, group).runs.push(run);
          measured[name] = run.perSecond;
        }
        if (measured.baseline) {
          for (const name of names)
            rowOf(name, group).ratios.vsBaseline.push(measured[name] / measured.baseline);
        }
        for (const [a, b, field] of group.ratios ?? []) {
          if (!measured[a] || !measured[b]) continue;
          const ratios = rowOf(a, group).ratios;
          ratios[field] ??= [];
          ratios[field].push(measured[a] / measured[b]);
        }
      }
    }
    for (const [name, { server, group, runs: serverRuns, ratios }] of rows) {
      const codes = {};
      for (const r of serverRuns)
        for (const [c, n] of Object.entries(r.codes)) codes[c] = (codes[c] ?? 0) + n;
      const cpu = (field) => median(serverRuns.map((r) => r[field]));
      const sum = (field) => serverRuns.reduce((t, r) => t + r[field], 0);
      const row = {
        framework,
        name,
        variant: server.variant,
        store: server.store,
        path: server.path,
        keys: group.keys ?? 'uniform',
        group: group.lease ? 'lease' : 'main',
        lease: server.lease === true,
        autopipelining: server.autopipelining === true,
        perSecond: median(serverRuns.map((r) => r.perSecond)),
        perRound: serverRuns.map((r) => r.perSecond),
        p50Ms: median(serverRuns.map((r) => r.p50Ms)),
        p99Ms: median(serverRuns.map((r) => r.p99Ms)),
        redisUsPerRequest: cpu('redisUsPerRequest'),
        serverUsPerRequest: cpu('serverUsPerRequest'),
        loadUsPerRequest: cpu('loadUsPerRequest'),
        // Script calls Redis ran over the 2xx answers of all of the row's runs.
        scriptCallsPer2xx: server.store === 'redis' ? sum('scriptCalls') / Math.max(1, sum('admitted')) : 0,
        errors: sum('errors'),
        codes,
      };
      for (const [field, values] of Object.entries(ratios)) {
        const s = spreadOf(values);
        if (s) row[field] = s;
      }
      report.push(row);
      process.stderr.write(
        `    ${name}: ${Math.round(row.perSecond)} req/s p50 ${row.p50Ms} ms p99 ${row.p99Ms} ms` +
          ` vs baseline ${row.vsBaseline?.median.toFixed(2)}` +
          `${row.vsUsual ? ` vs usual ${row.vsUsual.median.toFixed(2)}` : ''}` +
          `${row.vsMemory ? ` vs memory ${row.vsMemory.median.toFixed(2)}` : ''}` +
          ` CPU µs/request server ${row.serverUsPerRequest.toFixed(1)} Redis ${row.redisUsPerRequest.toFixed(1)}` +
          ` load ${row.loadUsPerRequest.toFixed(1)} script calls/2xx ${row.scriptCallsPer2xx.toFixed(4)}` +
          ` codes ${JSON.stringify(codes)}${row.errors ? ` errors ${row.errors}` : ''}\n`,
      );
    }
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
if (opts['lease-md']) writeFileSync(opts['lease-md'], renderLeaseMarkdown(report));
if (groupSets.includes('lease')) process.stderr.write(`\n${renderLeaseMarkdown(report)}`);
if (opts.out) writeFileSync(opts.out, JSON.stringify(output, null, 2));
else process.stdout.write(`${JSON.stringify(output)}\n`);
await admin.quit();
await ownRedis?.stop();
process.exit(0);
