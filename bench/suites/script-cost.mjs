/**
 * Redis-side cost of one decision: microseconds Redis spends per script call (INFO
 * commandstats usec_per_call for EVALSHA, which includes the commands the script runs),
 * for Sluice's decide script per algorithm and number of policies (the script RedisStore sends:
 * the algorithm's own), against rate-limiter-flexible's script, the minimal token-bucket script
 * and an empty script. Redis is single-threaded, so this
 * bounds decisions/s per Redis core: 1e6 / usec.
 *
 *   node suites/script-cost.mjs --redis-url URL [--quick] [--out file.json]
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { MINIMAL_TOKEN_BUCKET_SCRIPT } from '../lib/minimal-token-bucket.mjs';
import { loadSluice, storageKey } from '../lib/sluice.mjs';
import { median } from '../lib/stats.mjs';

const { values: opts } = parseArgs({
  options: {
    'redis-url': { type: 'string' },
    quick: { type: 'boolean', default: false },
    out: { type: 'string' },
  },
});
const CALLS = opts.quick ? 5_000 : 20_000;
const ROUNDS = opts.quick ? 1 : 3;
const BATCH = 64;
const client = new Redis(opts['redis-url']);
const { core } = await loadSluice();
const ids = Array.from({ length: 10_000 }, (_, i) => `user-${String(i).padStart(5, '0')}`);

async function measure(op) {
  // warm
  for (let i = 0; i < 500; i += BATCH) await Promise.all(Array.from({ length: BATCH }, (_, j) => op(i + j)));
  await client.config('RESETSTAT');
  for (let i = 0; i < CALLS; i += BATCH)
    await Promise.all(Array.from({ length: BATCH }, (_, j) => op(i + j)));
  const info = await client.info('commandstats');
  const m = /cmdstat_evalsha:calls=(\d+),usec=(\d+)/.exec(info);
  return m ? Number(m[2]) / Number(m[1]) : Number.NaN;
}

const cases = [];
const empty = await client.script('LOAD', 'return 1');
cases.push({ name: 'empty script (return 1)', op: () => client.evalsha(empty, 0) });
const minimal = await client.script('LOAD', MINIMAL_TOKEN_BUCKET_SCRIPT);
cases.push({
  name: 'minimal token-bucket script (HMGET, HSET, PEXPIRE)',
  op: (i) => client.evalsha(minimal, 1, `sc-min:{${ids[i % ids.length]}}`, '1000000', '3.6'),
});
if (core.DECIDE_SCRIPT && typeof core.encodeScriptArgs === 'function') {
  for (const script of core.DECIDE_SCRIPTS ?? [core.DECIDE_SCRIPT])
    await client.script('LOAD', script.source);
  for (const algorithm of ['token-bucket', 'gcra', 'sliding-window', 'fixed-window', 'sliding-log']) {
    for (const n of [1, 2]) {
      // A sliding log's limit is capped at 500 (SLIDING_LOG_MAX_LIMIT); these keys stay far below it.
      const log = algorithm === 'sliding-log';
      const policies = [
        { name: 'p1', algorithm, limit: log ? 500 : 1_000_000, window: '1h' },
        { name: 'p2', algorithm, limit: log ? 500 : 2_000_000, window: '1d' },
      ]
        .slice(0, n)
        .map((p) => core.definePolicy(p));
      const prefix = `sc-${algorithm}-${n}`;
      const entriesOf = (id) =>
        policies.map((policy) => ({ key: storageKey(core, prefix, id, policy), policy, cost: 1 }));
      // The script RedisStore sends for these policies (the algorithm's own, where the build has them).
      const sha1 = (core.decideScriptFor?.(entriesOf(ids[0])) ?? core.DECIDE_SCRIPT).sha1;
      const calls = ids.map((id) => {
        const entries = entriesOf(id);
        return [sha1, n, ...entries.map((e) => e.key), ...core.encodeScriptArgs(entries, 'consume')];
      });
      cases.push({
        name: `sluice decide, ${algorithm}, ${n} ${n === 1 ? 'policy' : 'policies'}`,
        algorithm,
        policies: n,
        op: (i) => client.evalsha(...calls[i % calls.length]),
      });
    }
  }
}
const rlf = new RateLimiterRedis({
  storeClient: client,
  points: 1_000_000,
  duration: 3600,
  keyPrefix: 'sc-rlf',
});
cases.push({ name: 'rate-limiter-flexible consume', op: (i) => rlf.consume(ids[i % ids.length]) });

const perRound = cases.map(() => []);
for (let round = 0; round < ROUNDS; round++) {
  for (let k = 0; k < cases.length; k++) {
    const index = (k + round) % cases.length;
    perRound[index].push(await measure(cases[index].op));
  }
}
const rows = cases.map((c, i) => ({
  name: c.name,
  algorithm: c.algorithm,
  policies: c.policies,
  usPerCall: median(perRound[i]),
  perRound: perRound[i],
}));
for (const r of rows) process.stderr.write(`  ${r.name}: ${r.usPerCall.toFixed(2)} µs per call in Redis\n`);
const output = { suite: 'script-cost', calls: CALLS, rounds: ROUNDS, rows };
if (opts.out) writeFileSync(opts.out, JSON.stringify(output, null, 2));
else process.stdout.write(`${JSON.stringify(output)}\n`);
await client.quit();
process.exit(0);
