/**
 * The decide script as built against the decide script of an earlier git revision, side by
 * side in one Redis: microseconds Redis spends per decision (INFO commandstats, one
 * decision per EVALSHA, the two scripts interleaved round by round) and MEMORY USAGE of
 * one key after one request, per algorithm. With --log-sizes, also the Redis time of one
 * sliding-log decision on a log already holding N records (built in place), for both.
 *
 * With --batch B, each EVALSHA carries B decisions on B keys (as RedisStore batches the checks
 * of one event-loop turn), and the figure is µs per decision (per call / B).
 *
 *   node suites/script-ab.mjs --redis-url URL --base <git rev> [--batch 128] [--log-sizes 1000,10000] [--calls N]
 */
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { loadSluice } from '../lib/sluice.mjs';
import { median } from '../lib/stats.mjs';

const { values: opts } = parseArgs({
  options: {
    'redis-url': { type: 'string' },
    base: { type: 'string', default: 'HEAD' },
    'log-sizes': { type: 'string', default: '' },
    calls: { type: 'string', default: '20000' },
    rounds: { type: 'string', default: '3' },
    batch: { type: 'string', default: '1' },
  },
});
const CALLS = Number(opts.calls);
const ROUNDS = Number(opts.rounds);
const BATCH = 64;
const PER_CALL = Number(opts.batch);
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const PARTS = [
  'common.lua',
  'token-bucket.lua',
  'gcra.lua',
  'sliding-window.lua',
  'fixed-window.lua',
  'sliding-log.lua',
  'decide.lua',
];
const baseSource = PARTS.map((part) => {
  const text = execFileSync('git', ['show', `${opts.base}:lua/${part}`], { cwd: root, encoding: 'utf8' });
  return `-- ==== lua/${part} ====\n${text.endsWith('\n') ? text : `${text}\n`}`;
}).join('');

// A revision from before shadow policies were decided in the script takes four items per policy
// (algorithm, limit, windowMs, intervalMs), not five: the built codec's `shadow` item is dropped
// for it. Its decide.lua says which in its ARGV contract.
const baseDecide = execFileSync('git', ['show', `${opts.base}:lua/decide.lua`], {
  cwd: root,
  encoding: 'utf8',
});
const basePolicyItems = /then four\s*\n--\s+per policy/.test(baseDecide) ? 4 : 5;

/** ARGV as the script `which` parses it: the built codec's, or the base revision's policy table. */
function argsFor(which, args) {
  if (which !== 'base' || basePolicyItems === 5) return args;
  const policies = Number(args[1]);
  const out = args.slice(0, 2);
  for (let p = 0; p < policies; p++) out.push(...args.slice(2 + 5 * p, 2 + 5 * p + 4));
  return out.concat(args.slice(2 + 5 * policies));
}

const client = new Redis(opts['redis-url']);
const { core } = await loadSluice();
const scripts = {
  base: await client.script('LOAD', baseSource),
  built: await client.script('LOAD', core.DECIDE_SCRIPT.source),
};
const NOW_US = 1_764_400_000_000_000;

/** µs per EVALSHA while `op(i)` runs CALLS times, BATCH in flight. */
async function usPerCall(op) {
  for (let i = 0; i < 256; i += BATCH) await Promise.all(Array.from({ length: BATCH }, (_, j) => op(i + j)));
  await client.config('RESETSTAT');
  const calls = Math.max(BATCH, Math.ceil(CALLS / PER_CALL));
  for (let i = 0; i < calls; i += BATCH)
    await Promise.all(Array.from({ length: BATCH }, (_, j) => op(i + j)));
  const m = /cmdstat_evalsha:calls=(\d+),usec=(\d+)/.exec(await client.info('commandstats'));
  return m ? Number(m[2]) / Number(m[1]) / PER_CALL : Number.NaN;
}

/** One call of PER_CALL short-form decisions (cost 1) on keys `key(0..)` of script `which`, Redis TIME. */
function batchCall(which, key, policy) {
  const decision = new core.ScriptCall('');
  for (let j = 0; j < PER_CALL; j++) decision.add([{ key: key(j), policy, cost: 1 }], 'consume');
  return client.evalsha(
    scripts[which],
    decision.keys.length,
    ...decision.keys,
    ...argsFor(which, decision.args()),
  );
}

/** One decision call of script `which` on the entry's key, Redis TIME unless `nowMs`. */
function call(which, key, policy, nowMs) {
  const entries = [{ key, policy, cost: 1 }];
  return client.evalsha(
    scripts[which],
    1,
    key,
    ...argsFor(which, core.encodeScriptArgs(entries, 'consume', nowMs)),
  );
}

const algorithms = ['token-bucket', 'gcra', 'sliding-window', 'fixed-window', 'sliding-log'];
const ids = Array.from({ length: 10_000 }, (_, i) => `user-${String(i).padStart(5, '0')}`);
const rows = [];
for (const algorithm of algorithms) {
  const policy = core.definePolicy({
    name: 'p1',
    algorithm,
    limit: algorithm === 'sliding-log' ? 500 : 1_000_000,
    window: '1h',
  });
  const times = { base: [], built: [] };
  for (let round = 0; round < ROUNDS; round++) {
    for (const which of round % 2 === 0 ? ['base', 'built'] : ['built', 'base']) {
      const prefix = `ab-${which}-${algorithm}-${round}`;
      const op =
        PER_CALL === 1
          ? (i) => call(which, `${prefix}:{${ids[i % ids.length]}}:p1`, policy)
          : (i) => batchCall(which, (j) => `${prefix}:{${ids[(i * PER_CALL + j) % ids.length]}}:p1`, policy);
      times[which].push(await usPerCall(op));
    }
  }
  const memory = {};
  const small = core.definePolicy({ name: 'p1', algorithm, limit: 100, window: '1m' });
  for (const which of ['base', 'built']) {
    memory[which] = [];
    for (const key of ['k4', 'sluice:{user-00042}:p1']) {
      await client.del(key);
      await call(which, key, small);
      memory[which].push(await client.memory('USAGE', key));
    }
  }
  rows.push({
    algorithm,
    baseUs: median(times.base),
    builtUs: median(times.built),
    baseMinUs: Math.min(...times.base),
    builtMinUs: Math.min(...times.built),
    memory,
  });
}
for (const r of rows) {
  process.stdout.write(
    `${r.algorithm}: ${r.baseUs.toFixed(2)} -> ${r.builtUs.toFixed(2)} µs per decision (${((r.builtUs / r.baseUs - 1) * 100).toFixed(1)}%; ` +
      `fastest round ${r.baseMinUs.toFixed(2)} -> ${r.builtMinUs.toFixed(2)}, ${((r.builtMinUs / r.baseMinUs - 1) * 100).toFixed(1)}%); ` +
      `MEMORY USAGE k4 ${r.memory.base[0]} -> ${r.memory.built[0]} B, sluice:{user-00042}:p1 ${r.memory.base[1]} -> ${r.memory.built[1]} B\n`,
  );
}

// Sliding log: one decision on a log holding n records (oldest first, spread over the
// window, all live), limit 2n (admitted) and n (denied).
const pad = (x) => String(x).padStart(16, ' ');
for (const n of opts['log-sizes'].split(',').filter(Boolean).map(Number)) {
  const windowMs = 3_600_000;
  const parts = [pad(0)];
  for (let i = 1; i <= n; i++)
    parts.push(pad(NOW_US - windowMs * 1000 + Math.round((i * windowMs * 1000) / (n + 1))) + pad(i));
  const log = parts.join('');
  for (const [label, limit] of [
    ['admitted', 2 * n],
    ['denied', n],
  ]) {
    // A compiled policy as the store takes it: definePolicy caps a sliding log's limit at 500.
    const policy = {
      name: 'p1',
      algorithm: 'sliding-log',
      limit,
      windowMs,
      intervalMs: windowMs / limit,
      cost: 1,
    };
    const result = {};
    for (const which of ['base', 'built']) {
      const key = `ab-log-${which}-${n}-${label}`;
      await client.set(key, log);
      const us = [];
      for (let round = 0; round < ROUNDS; round++) {
        await client.config('RESETSTAT');
        for (let i = 0; i < 200; i++) await call(which, key, policy, NOW_US / 1000);
        const m = /cmdstat_evalsha:calls=(\d+),usec=(\d+)/.exec(await client.info('commandstats'));
        us.push(Number(m[2]) / Number(m[1]));
      }
      result[which] = median(us);
    }
    process.stdout.write(
      `sliding-log, ${n} records, ${label}: ${result.base.toFixed(1)} -> ${result.built.toFixed(1)} µs per decision\n`,
    );
  }
}
await client.quit();
process.exit(0);
