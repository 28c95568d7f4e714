/**
 * Leased over unleased, in-process: `limiter.check()` on one real redis-server with 256 checks in
 * flight, the same token bucket with and without a lease (units 100 unless `--units`, TTL 1 s, as
 * the HTTP lease rows), side by side in one run, rounds alternated so load from elsewhere hits both alike. Key
 * distributions: `uniform` over 10k identities, `once` (a fresh identity per check: keys seen
 * about once), `zipf` (s = 1.1 over 10k identities) and `hot` (one identity). The ratio of a round
 * is leased / unleased decisions per second; the median over rounds is reported per tree.
 *
 *   node bench/suites/leases-inproc.mjs --trees /path/to/before,/path/to/after
 *        [--distributions uniform,once,zipf,hot] [--rounds 5] [--duration-ms 600] [--units 100] [--out file.json]
 *
 * Each tree must be built (`npm run build`): its core is loaded from packages/core/dist. Starts
 * and stops its own redis-server; every round flushes it, so each case starts from fresh keys.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { startRedis } from '../../test/support/redis-server.js';
import { keySequence } from '../lib/key-distributions.mjs';
import { runClosedLoop } from '../lib/load.mjs';
import { median } from '../lib/stats.mjs';

const { values: opts } = parseArgs({
  options: {
    trees: { type: 'string' },
    distributions: { type: 'string', default: 'uniform,once,zipf,hot' },
    rounds: { type: 'string', default: '5' },
    'duration-ms': { type: 'string', default: '600' },
    units: { type: 'string', default: '100' },
    out: { type: 'string' },
  },
});
const fail = (message) => {
  console.error(`leases-inproc: ${message}`);
  process.exit(2);
};
if (opts.trees === undefined) fail('--trees is required: one or more built trees, comma-separated');
const trees = opts.trees.split(',');
const distributions = opts.distributions.split(',');
for (const d of distributions)
  if (!['uniform', 'once', 'zipf', 'hot'].includes(d)) fail(`--distributions: unknown ${d}`);
const rounds = Number(opts.rounds);
const durationMs = Number(opts['duration-ms']);
if (!Number.isInteger(rounds) || rounds < 1) fail(`--rounds must be a positive integer, got ${opts.rounds}`);
if (!(durationMs > 0)) fail(`--duration-ms must be a positive number, got ${opts['duration-ms']}`);

const IDENTITIES = 10_000;
const CONCURRENCY = 256;
const WARMUP_MS = 150;
const units = Number(opts.units);
if (!Number.isInteger(units) || units < 1) fail(`--units must be a positive integer, got ${opts.units}`);
const LEASE = { units, ttlMs: 1000 };
/** A budget no case runs out of: every check is admitted. */
const policy = (leased) => ({
  name: 'api',
  algorithm: 'token-bucket',
  burst: 1_000_000,
  rate: '1000000/s',
  ...(leased && { lease: LEASE }),
});

/** The identity of check `seq` for a distribution. */
function identityOf(distribution) {
  if (distribution === 'once') return (seq) => `once-${seq}`;
  const table = keySequence(distribution === 'hot' ? 'hot' : distribution, {
    identities: IDENTITIES,
    zipfExponent: 1.1,
  });
  const mask = table.length - 1;
  return (seq) => `user-${table[seq & mask]}`;
}

const redis = await startRedis();
const results = [];
try {
  const loaded = [];
  for (const tree of trees) {
    const dist = join(tree, 'packages/core/dist');
    const core = await import(pathToFileURL(join(dist, 'index.js')).href);
    const node = await import(pathToFileURL(join(dist, 'node/index.js')).href);
    loaded.push({ tree, core, node });
  }
  const { Redis } = await import('ioredis');
  const admin = new Redis(redis.url);
  for (const distribution of distributions) {
    const identity = identityOf(distribution);
    const ratios = new Map(trees.map((t) => [t, []]));
    const perSecond = new Map(
      trees.flatMap((t) => [
        [`${t} leased`, []],
        [`${t} unleased`, []],
      ]),
    );
    for (let round = 0; round < rounds; round++) {
      for (const { tree, core, node } of loaded) {
        const rates = {};
        for (const leased of round % 2 === 0 ? [true, false] : [false, true]) {
          await admin.flushall();
          const store = node.createRedisStore(redis.url);
          const limiter = core.createLimiter({ store, policies: [policy(leased)], prefix: 'bench' });
          const run = await runClosedLoop((seq) => limiter.check({ identity: identity(seq) }), {
            concurrency: CONCURRENCY,
            warmupMs: WARMUP_MS,
            durationMs,
          });
          await store.close?.();
          rates[leased ? 'leased' : 'unleased'] = run.perSecond;
          perSecond.get(`${tree} ${leased ? 'leased' : 'unleased'}`).push(run.perSecond);
        }
        ratios.get(tree).push(rates.leased / rates.unleased);
      }
    }
    for (const tree of trees) {
      const row = {
        distribution,
        tree,
        ratio: median(ratios.get(tree)),
        ratios: ratios.get(tree),
        leasedPerSecond: median(perSecond.get(`${tree} leased`)),
        unleasedPerSecond: median(perSecond.get(`${tree} unleased`)),
      };
      results.push(row);
      console.log(
        `${distribution.padEnd(8)} ${tree}: leased/unleased ${row.ratio.toFixed(2)}x ` +
          `(leased ${Math.round(row.leasedPerSecond)}/s, unleased ${Math.round(row.unleasedPerSecond)}/s; ` +
          `rounds ${row.ratios.map((r) => r.toFixed(2)).join(' ')})`,
      );
    }
  }
  await admin.quit();
} finally {
  await redis.stop();
}
if (opts.out) writeFileSync(opts.out, `${JSON.stringify(results, null, 2)}\n`);
