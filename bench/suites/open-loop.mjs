/**
 * Open-loop suite: each framework's server (no limiter, Sluice on the memory store, Sluice on
 * Redis, Sluice on Redis with a leased policy, the framework's usual limiter on Redis) under fixed arrival rates in tiers (1k, 2k, 5k,
 * 10k, 20k, 40k req/s by default), for three key distributions (uniform over 10k identities, one
 * hot identity, Zipf over 10k). Per tier: p50/p95/p99 from each request's due time, the error
 * share (timeouts, connection errors, the client's backlog) and CPU seconds per 1k requests of
 * the server, Redis and the load generator, and script calls Redis ran per 2xx answer (INFO
 * commandstats). Each server first answers
 * `--server-warmup-requests` requests, unmeasured, in a closed loop (its code is cold when it starts). A setup that falls over at a tier (see `held`) is not
 * run at higher tiers. Servers run in child processes, the generator here; 127.0.0.1 only.
 *
 *   node suites/open-loop.mjs [--redis-url URL] [--quick] [--frameworks express,hono]
 *        [--setups baseline,sluice-memory,sluice-redis,sluice-leased,usual-redis] [--dists uniform,hot,zipf]
 *        [--tiers 1000,2000,5000] [--duration-s 3] [--warmup-s 1] [--out-dir DIR]
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { startRedis } from '../../test/support/redis-server.js';
import { IDENTITIES, LEASE_ARGS, startServerProcess, stopServerProcess } from '../lib/http-server.mjs';
import { DISTRIBUTIONS, hottestShare, keySequence } from '../lib/key-distributions.mjs';
import { processCpuSeconds, runOpenLoop, warmUp } from '../lib/open-loop.mjs';
import { renderOpenLoopMarkdown, renderOpenLoopSvg } from '../lib/open-loop-report.mjs';
import { redisCpuSeconds } from '../lib/redis-cpu.mjs';
import { redisScriptCalls } from '../lib/redis-script-calls.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const { values: opts } = parseArgs({
  options: {
    'redis-url': { type: 'string' },
    quick: { type: 'boolean', default: false },
    frameworks: { type: 'string', default: 'express,koa,hono,nest,fastify' },
    setups: { type: 'string' },
    dists: { type: 'string', default: DISTRIBUTIONS.join(',') },
    tiers: { type: 'string' },
    'duration-s': { type: 'string' },
    'warmup-s': { type: 'string' },
    'server-warmup-requests': { type: 'string' },
    'max-p99-ms': { type: 'string', default: '100' },
    'max-error-share': { type: 'string', default: '0.01' },
    'out-dir': { type: 'string', default: join(here, '..', 'results') },
    out: { type: 'string' },
  },
});

/** The setups: a name and the server.mjs options that make it. */
const SETUPS = {
  baseline: { variant: 'baseline', store: 'memory' },
  'sluice-memory': { variant: 'sluice', store: 'memory' },
  'sluice-redis': { variant: 'sluice', store: 'redis' },
  // The same policy with a lease (LEASE_ARGS: 100 units for 1 s).
  'sluice-leased': { variant: 'sluice', store: 'redis', lease: true },
  'usual-redis': { variant: 'usual', store: 'redis' },
};

const frameworks = opts.frameworks.split(',');
const setups = (opts.setups ?? Object.keys(SETUPS).join(',')).split(',');
for (const s of setups) {
  if (!(s in SETUPS))
    throw new Error(`--setups: unknown setup ${s}; setups: ${Object.keys(SETUPS).join(', ')}`);
}
const dists = opts.dists.split(',');
const tiers = (opts.tiers ?? (opts.quick ? '1000,5000' : '1000,2000,5000,10000,20000,40000'))
  .split(',')
  .map(Number);
for (const t of tiers) {
  if (!Number.isInteger(t) || t <= 0)
    throw new Error(`--tiers: each tier must be a positive integer, got ${t}`);
}
const durationMs = 1000 * Number(opts['duration-s'] ?? (opts.quick ? 1 : 3));
const warmupMs = 1000 * Number(opts['warmup-s'] ?? (opts.quick ? 0.3 : 1));
const serverWarmupRequests = Number(opts['server-warmup-requests'] ?? (opts.quick ? 5000 : 20000));
const maxP99Ms = Number(opts['max-p99-ms']);
const maxErrorShare = Number(opts['max-error-share']);

/** A tier is held when almost every request was answered, and answered in time. */
function held(tier) {
  return tier.errorShare <= maxErrorShare && tier.p99Ms <= maxP99Ms;
}

const ownRedis = opts['redis-url'] === undefined ? await startRedis() : undefined;
const redisUrl = opts['redis-url'] ?? ownRedis.url;
const redis = new Redis(redisUrl);
const started = Date.now();
const loadAtStart = loadavg()[0].toFixed(2);
const runs = [];
try {
  for (const framework of frameworks) {
    for (const dist of dists) {
      const sequence = keySequence(dist, { identities: IDENTITIES.length });
      const headersAt = (i) => ({ 'x-api-key': IDENTITIES[sequence[i & (sequence.length - 1)]] });
      for (const setup of setups) {
        runs.push(await runSetup(framework, setup, dist, hottestShare(sequence), headersAt));
      }
    }
  }
} finally {
  redis.disconnect();
  await ownRedis?.stop();
}

/** One server through the tiers, lowest first, until it falls over. */
async function runSetup(framework, setup, dist, hotShare, headersAt) {
  const { variant, store, lease } = SETUPS[setup];
  const args = ['--framework', framework, '--variant', variant, '--store', store, '--path', 'allowed'];
  if (store === 'redis') args.push('--redis-url', redisUrl);
  if (lease) args.push(...LEASE_ARGS);
  const server = await startServerProcess(args, { label: `${framework} ${setup}` });
  const results = [];
  const origin = `http://127.0.0.1:${server.port}`;
  try {
    // A fresh process runs its code cold: warm it up first, unmeasured.
    await warmUp({ origin, path: '/limited', requests: serverWarmupRequests, headersAt });
    for (const rate of tiers) {
      const cpu0 = { server: processCpuSeconds(server.child.pid), redis: await redisCpuSeconds(redis) };
      const calls0 = await redisScriptCalls(redis);
      const gen0 = process.cpuUsage();
      const tier = await runOpenLoop({
        origin,
        path: '/limited',
        ratePerSecond: rate,
        durationMs,
        warmupMs,
        headersAt,
      });
      const gen = process.cpuUsage(gen0);
      const sent = (rate * (durationMs + warmupMs)) / 1000;
      const perK = (seconds) => (1000 * seconds) / sent;
      tier.cpuSecondsPer1k = {
        server: perK(processCpuSeconds(server.child.pid) - cpu0.server),
        redis: perK((await redisCpuSeconds(redis)) - cpu0.redis),
        generator: perK((gen.user + gen.system) / 1e6),
      };
      // Script calls of the whole tier (warm-up included) over the tier's 2xx answers.
      tier.scriptCallsPer2xx =
        store === 'redis' ? ((await redisScriptCalls(redis)) - calls0) / Math.max(1, tier.admittedAll) : 0;
      tier.held = held(tier);
      results.push(tier);
      process.stderr.write(
        `${framework} ${setup} ${dist} ${rate}/s: p50 ${tier.p50Ms.toFixed(2)} p99 ${tier.p99Ms.toFixed(2)} ms, script calls/2xx ${tier.scriptCallsPer2xx.toFixed(4)}, errors ${(100 * tier.errorShare).toFixed(1)}%${tier.held ? '' : ' (fell over)'}\n`,
      );
      if (!tier.held) break;
    }
  } finally {
    await stopServerProcess(server);
  }
  return { framework, setup, dist, hotShare, tiers: results };
}

const meta = {
  date: new Date(started).toISOString().replace(/\.\d+Z$/, 'Z'),
  command: `node bench/suites/open-loop.mjs ${process.argv.slice(2).join(' ')}`.trim(),
  node: process.version,
  cpus: cpus().length,
  loadAverage: `${loadAtStart} at start, ${loadavg()[0].toFixed(2)} at the end`,
  seconds: Math.round((Date.now() - started) / 1000),
  durationMs,
  warmupMs,
  serverWarmupRequests,
  heldWhen: { maxP99Ms, maxErrorShare },
};
const report = { meta, runs };
if (opts.out) writeFileSync(opts.out, `${JSON.stringify(report, null, 2)}\n`);
else {
  mkdirSync(opts['out-dir'], { recursive: true });
  writeFileSync(join(opts['out-dir'], 'open-loop.json'), `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(join(opts['out-dir'], 'open-loop.md'), renderOpenLoopMarkdown(report));
  writeFileSync(join(opts['out-dir'], 'open-loop.svg'), renderOpenLoopSvg(report));
  process.stderr.write(`wrote open-loop.md, open-loop.json and open-loop.svg in ${opts['out-dir']}\n`);
}
