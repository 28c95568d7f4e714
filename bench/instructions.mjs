/**
 * Instructions per HTTP request of each benchmark server, counted by valgrind's callgrind: the
 * server's own work, a figure that does not move with the machine's load (throughput on this
 * shared 2-core box moves by tens of percent between consecutive runs). Not part of
 * `npm run bench`: it takes about a minute per server.
 *
 *   node bench/instructions.mjs [--frameworks hono,koa,express,nest,fastify] [--servers sluice-memory,usual-memory]
 *        [--path allowed|deny|concurrent|queued[,...]] [--keys uniform|zipf|hot] [--warmup 20000] [--requests 10000]
 *        [--parallel 1] [--out-dir DIR]
 *
 * `--path`: one path or several, each counted for every server (servers/config.mjs): `allowed`
 * (random keys, a quota no key uses up), `deny` (one key over quota), and two paths of Sluice's
 * servers and the baseline only, keyed as `allowed`: `concurrent` (a concurrency policy) and
 * `queued` (the allowed path's policy with `maxWaitMs`, never waiting). Every row says how many
 * answers were not 2xx.
 *
 * Each server runs under `valgrind --tool=callgrind --separate-threads=yes` with counting off;
 * autocannon sends `--warmup` requests (8 connections), counting is switched on
 * (`callgrind_control -i on`), `--requests` more are sent, and the event-loop thread's count is
 * read from the dump. That thread runs the JavaScript, node's HTTP parser and V8's garbage
 * collector; V8's background compiler threads are left out (in a normal process they run
 * beside the event loop). User space only: the kernel's socket work is not counted, so the
 * figures say what the code costs, not what the machine's wake-ups cost (see README.md).
 * Needs valgrind (Debian package `valgrind`).
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startRedis } from '../test/support/redis-server.js';
import { LEASE_ARGS, loadLimited, startServerProcess, stopServerProcess } from './lib/http-server.mjs';
import { SLUICE_ONLY_PATHS } from './servers/config.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const { values: opts } = parseArgs({
  options: {
    frameworks: { type: 'string', default: 'express,koa,hono,nest' },
    servers: {
      type: 'string',
      default: 'baseline,noop-async,sluice-memory,usual-memory,sluice-redis,usual-redis',
    },
    path: { type: 'string', default: 'allowed' },
    // The allowed path's key distribution (http-server.mjs).
    keys: { type: 'string', default: 'uniform' },
    warmup: { type: 'string', default: '20000' },
    requests: { type: 'string', default: '10000' },
    parallel: { type: 'string', default: '1' },
    'out-dir': { type: 'string', default: join(here, 'results') },
  },
});

const FRAMEWORKS = ['express', 'koa', 'hono', 'nest', 'fastify'];
const SERVERS = {
  baseline: { variant: 'baseline', store: 'memory', label: 'baseline (no limiter)' },
  noop: { variant: 'noop', store: 'memory', label: 'empty middleware' },
  'noop-async': { variant: 'noop-async', store: 'memory', label: 'async empty middleware' },
  'fixed-429': { variant: 'fixed-429', store: 'memory', label: 'fixed 429 middleware' },
  'sluice-memory': { variant: 'sluice', store: 'memory', label: 'Sluice, memory store' },
  'usual-memory': { variant: 'usual', store: 'memory', label: 'usual limiter, memory store' },
  'sluice-redis': { variant: 'sluice', store: 'redis', label: 'Sluice, Redis' },
  'sluice-leased': { variant: 'sluice', store: 'redis', lease: true, label: 'Sluice, Redis, leased policy' },
  'usual-redis': { variant: 'usual', store: 'redis', label: 'usual limiter, Redis' },
};

function fail(message) {
  console.error(`instructions: ${message}`);
  process.exit(2);
}
const frameworks = opts.frameworks.split(',');
for (const f of frameworks) if (!FRAMEWORKS.includes(f)) fail(`--frameworks: unknown framework ${f}`);
const servers = opts.servers.split(',');
for (const s of servers)
  if (!(s in SERVERS)) fail(`--servers: unknown server ${s} (known: ${Object.keys(SERVERS).join(', ')})`);
const paths = opts.path.split(',');
for (const path of paths) {
  if (!['allowed', 'deny', ...SLUICE_ONLY_PATHS].includes(path))
    fail(`--path must be allowed, deny, concurrent or queued, got ${path}`);
  const others = servers.filter((s) => SERVERS[s].variant !== 'sluice' && SERVERS[s].variant !== 'baseline');
  if (SLUICE_ONLY_PATHS.includes(path) && others.length > 0)
    fail(`--path ${path} is for the sluice-* servers and baseline, got --servers ${others.join(',')}`);
}
const positive = (name) => {
  const n = Number(opts[name]);
  if (!Number.isInteger(n) || n < 1) fail(`--${name} must be a positive integer, got ${opts[name]}`);
  return n;
};
const WARMUP = positive('warmup');
const REQUESTS = positive('requests');
const PARALLEL = positive('parallel');
if (spawnSync('valgrind', ['--version']).status !== 0)
  fail('valgrind is not installed (apt-get install -y valgrind)');

function control(pid, ...args) {
  const out = spawnSync('callgrind_control', [...args, String(pid)], { encoding: 'utf8' });
  if (out.status !== 0) throw new Error(`callgrind_control ${args.join(' ')} failed: ${out.stderr}`);
}

/** The event-loop thread's instruction count in the dump callgrind wrote to `dir`. */
function mainThreadInstructions(dir) {
  // With --separate-threads=yes the files end in -<thread>; thread 01 is the main thread. The
  // dump on request is part .1; the part written at exit (after counting was switched off) is
  // empty.
  const dumps = readdirSync(dir).filter((f) => /\.1-01$/.test(f));
  if (dumps.length !== 1)
    throw new Error(`expected one dump of the main thread in ${dir}, got ${dumps.join(', ')}`);
  const text = readFileSync(join(dir, dumps[0]), 'utf8');
  const m = /^(?:summary|totals): (\d+)/m.exec(text);
  if (!m) throw new Error(`no instruction total in ${dumps[0]}`);
  return Number(m[1]);
}

async function measure(framework, name, path, redisUrl) {
  const server = SERVERS[name];
  const dir = mkdtempSync(join(tmpdir(), 'sluice-callgrind-'));
  const args = [
    '--framework',
    framework,
    '--variant',
    server.variant,
    '--store',
    server.store,
    ...(server.lease ? LEASE_ARGS : []),
  ];
  const launcher = [
    'valgrind',
    '--tool=callgrind',
    '--instr-atstart=no',
    '--separate-threads=yes',
    `--callgrind-out-file=${join(dir, 'cg.out')}`,
  ];
  const label = `${framework}/${name}/${path}`;
  const load = (amount) =>
    loadLimited({
      port: running.port,
      amount,
      connections: 8,
      allowed: path !== 'deny',
      keys: opts.keys,
    });
  let running;
  try {
    running = await startServerProcess([...args, '--path', path, '--redis-url', redisUrl], {
      launcher,
      label,
      startTimeoutMs: 240_000,
    });
    await load(WARMUP);
    control(running.child.pid, '-i', 'on');
    const measured = await load(REQUESTS);
    control(running.child.pid, '-d');
    control(running.child.pid, '-i', 'off');
    // A response lost on the way (a connection error under valgrind's slowness) is not counted;
    // more than 1% lost makes the figure untrustworthy.
    const answered = measured['2xx'] + measured.non2xx;
    const lost = measured.errors + measured.timeouts;
    if (answered === 0 || lost > REQUESTS / 100)
      throw new Error(`${label}: ${answered} answered, ${lost} errors or timeouts`);
    await stopServerProcess(running);
    return {
      framework,
      server: name,
      path,
      label: server.label,
      perRequest: mainThreadInstructions(dir) / answered,
      answered,
      non2xx: measured.non2xx,
      lost,
    };
  } finally {
    if (running !== undefined) await stopServerProcess(running);
    rmSync(dir, { recursive: true, force: true });
  }
}

const redis = await startRedis();
const started = Date.now();
const jobs = frameworks.flatMap((framework) =>
  paths.flatMap((path) => servers.map((name) => [framework, name, path])),
);
const rows = [];
const failed = [];
try {
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) {
      const [framework, name, path] = jobs[next++];
      try {
        const row = await measure(framework, name, path, redis.url);
        console.log(`${framework} ${name} ${path}: ${Math.round(row.perRequest)} instructions per request`);
        rows.push(row);
      } catch (error) {
        // One server's failure leaves its row out; the others are still worth having.
        console.error(`${framework} ${name} ${path}: not measured: ${error.message}`);
        failed.push(`${framework}/${name}/${path}`);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL, jobs.length) }, worker));
} finally {
  await redis.stop();
}

const find = (framework, server, path) =>
  rows.find((r) => r.framework === framework && r.server === server && r.path === path);
const fileName = `instructions-${paths.join('-')}`;
const lines = [
  '# Instructions per request (callgrind)',
  '',
  `${new Date().toISOString().slice(0, 16)}Z · \`node bench/instructions.mjs --path ${opts.path}\` · ${Math.round((Date.now() - started) / 1000)} s · ${WARMUP} warm-up requests, then ${REQUESTS} counted, 8 connections`,
  '',
  "The event-loop thread's instructions per request of each server (JavaScript, node's HTTP parser, V8's garbage collector; user space only). Unlike req/s on this shared machine, these repeat within a few percent when servers are counted one at a time (`--parallel 1`, the default; two at once moved one count by 9%). `vs baseline` is the baseline's count over this server's: the share of the baseline's throughput this server would reach if instructions were all that mattered (they are not: the kernel's socket work and wake-ups are not counted). `vs allowed path`: this count over the same server's on the allowed path (counted in this run).",
  '',
  '| framework | path | server | instructions / request | vs baseline | extra over baseline | vs allowed path | Sluice vs usual limiter | non-2xx |',
  '| --- | --- | --- | --- | --- | --- | --- | --- | --- |',
];
for (const framework of frameworks) {
  for (const path of paths) {
    const baseline = find(framework, 'baseline', path) ?? find(framework, 'baseline', paths[0]);
    for (const name of servers) {
      const row = find(framework, name, path);
      if (!row) continue;
      const usual = name.startsWith('sluice-')
        ? find(framework, name.replace('sluice-', 'usual-'), path)
        : undefined;
      const allowed = path === 'allowed' ? undefined : find(framework, name, 'allowed');
      lines.push(
        `| ${framework} | ${path} | ${row.label} | ${Math.round(row.perRequest)} | ${baseline ? (baseline.perRequest / row.perRequest).toFixed(2) : ''} | ${baseline ? Math.round(row.perRequest - baseline.perRequest) : ''} | ${allowed ? `${(row.perRequest / allowed.perRequest).toFixed(3)}x (${Math.round(row.perRequest - allowed.perRequest)})` : ''} | ${usual ? `${(usual.perRequest / row.perRequest).toFixed(2)}x` : ''} | ${row.non2xx} |`,
      );
    }
  }
}
mkdirSync(opts['out-dir'], { recursive: true });
writeFileSync(join(opts['out-dir'], `${fileName}.md`), `${lines.join('\n')}\n`);
writeFileSync(
  join(opts['out-dir'], `${fileName}.json`),
  `${JSON.stringify({ paths, warmup: WARMUP, requests: REQUESTS, rows }, null, 2)}\n`,
);
console.log(lines.join('\n'));
if (failed.length > 0) {
  console.error(`instructions: not measured: ${failed.join(', ')}`);
  process.exitCode = 1;
}
