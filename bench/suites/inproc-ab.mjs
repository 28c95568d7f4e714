/**
 * In-process decisions per second of one and two policies, two or more built trees side by side
 * in one process on one redis-server (rounds alternated, the order rotated every round), so a
 * change's two-policy ratio is measured against its base under the same load. Also
 * rate-limiter-flexible (RateLimiterRedis; RateLimiterUnion for two) with `--rlf`.
 *
 *   node bench/suites/inproc-ab.mjs --trees /path/to/base,/path/to/new
 *        [--algos token-bucket,gcra] [--rounds 5] [--ms 700] [--rlf]
 *
 * Each tree must be built (`npm run build`). As bench/suites/inproc.mjs: `limiter.check` with
 * `createRedisStore`, 256 checks in flight over 10k identities, policies p1 (limit 1e6 per hour)
 * and p2 (2e6 per day). Prints per case the median decisions/s, the client's and Redis's CPU per
 * decision, then per tree and algorithm the median of the per-round two/one-policy ratios. A tree
 * loaded first may run a little faster in one process: swap the order for a second run.
 */
import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';
import { startRedis } from '../../test/support/redis-server.js';
import { runClosedLoop } from '../lib/load.mjs';
import { median } from '../lib/stats.mjs';

const { values: opts } = parseArgs({
  options: {
    trees: { type: 'string' },
    algos: { type: 'string', default: 'token-bucket,gcra' },
    rounds: { type: 'string', default: '5' },
    ms: { type: 'string', default: '700' },
    rlf: { type: 'boolean', default: false },
  },
});
if (opts.trees === undefined) throw new Error('--trees is required: built trees, comma-separated');
const trees = opts.trees.split(',');
const require = createRequire(import.meta.url);
const { Redis } = require('ioredis');
const { RateLimiterRedis, RateLimiterUnion } = require('rate-limiter-flexible');

const CONCURRENCY = 256;
const redis = await startRedis();
const admin = new Redis(redis.url);
const ids = Array.from({ length: 10_000 }, (_, i) => `user-${String(i).padStart(5, '0')}`);
const descriptors = ids.map((identity) => ({ identity }));

/** The policies of a case: p1, and p2 for two (sliding-log limits kept at its 500 most). */
function policies(algorithm, count) {
  const most = algorithm === 'sliding-log' ? 500 : Number.POSITIVE_INFINITY;
  const list = [{ name: 'p1', algorithm, limit: Math.min(1_000_000, most), window: '1h' }];
  if (count === 2) list.push({ name: 'p2', algorithm, limit: Math.min(2_000_000, most), window: '1d' });
  return list;
}

const libs = [];
for (const tree of trees) {
  const core = await import(`${tree}/packages/core/dist/index.js`);
  const node = await import(`${tree}/packages/core/dist/node/index.js`);
  libs.push({ name: tree.split('/').pop(), core, store: node.createRedisStore(redis.url) });
}
let prefixes = 0;
const cases = [];
for (const algorithm of opts.algos.split(','))
  for (const count of [1, 2])
    for (const lib of libs) {
      const limiter = lib.core.createLimiter({
        policies: policies(algorithm, count),
        store: lib.store,
        prefix: `ab${prefixes++}`,
        timeoutMs: 2000,
      });
      cases.push({
        id: `${lib.name} ${algorithm} ${count}p`,
        op: (i) => limiter.check(descriptors[i % descriptors.length]),
      });
    }
let rlfClient;
if (opts.rlf) {
  rlfClient = new Redis(redis.url);
  const make = (name, points, duration) =>
    new RateLimiterRedis({ storeClient: rlfClient, keyPrefix: `ab${prefixes++}${name}`, points, duration });
  for (const count of [1, 2]) {
    const first = make('p1', 1_000_000, 3600);
    const limiter = count === 2 ? new RateLimiterUnion(first, make('p2', 2_000_000, 86_400)) : first;
    cases.push({ id: `rlf fixed-window ${count}p`, op: (i) => limiter.consume(ids[i % ids.length]) });
  }
}
for (const c of cases) Object.assign(c, { perSecond: [], cpuUs: [], redisCpuUs: [] });

/** Redis's own CPU seconds (user + system) so far. */
async function redisCpuSeconds() {
  const info = await admin.info('cpu');
  const read = (name) => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)?.[1]);
  return read('used_cpu_sys') + read('used_cpu_user');
}

for (const c of cases) await runClosedLoop(c.op, { concurrency: CONCURRENCY, warmupMs: 0, durationMs: 300 });
const rounds = Number(opts.rounds);
for (let round = 0; round < rounds; round++) {
  for (let k = 0; k < cases.length; k++) {
    const c = cases[(k + round) % cases.length];
    const before = await redisCpuSeconds();
    const r = await runClosedLoop(c.op, {
      concurrency: CONCURRENCY,
      warmupMs: 150,
      durationMs: Number(opts.ms),
    });
    const after = await redisCpuSeconds();
    c.perSecond.push(r.perSecond);
    c.cpuUs.push(r.cpuUsPerOp);
    c.redisCpuUs.push(((after - before) * 1e6) / Math.max(1, r.started));
  }
  process.stderr.write(`round ${round + 1}/${rounds}\n`);
}
const round1 = (x) => Math.round(x / 1000);
for (const c of cases)
  console.log(
    `${c.id.padEnd(36)} ${Math.round(median(c.perSecond))}/s [${c.perSecond.map(round1).join(' ')}k]` +
      ` client cpu ${median(c.cpuUs).toFixed(1)} µs/op, redis cpu ${median(c.redisCpuUs).toFixed(1)} µs/op`,
  );
const byId = new Map(cases.map((c) => [c.id, c]));
for (const c of cases) {
  if (!c.id.endsWith(' 2p')) continue;
  const one = byId.get(c.id.replace(/2p$/, '1p'));
  const ratios = c.perSecond.map((x, i) => x / one.perSecond[i]);
  const cpu = (median(one.cpuUs) + median(one.redisCpuUs)) / (median(c.cpuUs) + median(c.redisCpuUs));
  console.log(
    `two/one ${c.id.replace(/ 2p$/, '').padEnd(30)} ${median(ratios).toFixed(2)} [${ratios.map((x) => x.toFixed(2)).join(' ')}]` +
      ` by CPU (client + redis) ${cpu.toFixed(2)}`,
  );
}
await admin.quit();
await rlfClient?.quit();
for (const lib of libs) await lib.store.close?.();
await redis.stop();
process.exit(0);
