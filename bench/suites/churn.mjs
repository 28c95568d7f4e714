/**
 * MemoryStore under churn: a flood of distinct identities, every new key evicting a live one.
 * For each `maxKeys`, fills the store, then checks `--churn` more distinct keys (each once, all
 * live, so every check evicts the least recently used key) and reports µs per check for each
 * tenth of the churn: flat means the cost per check does not grow with the keys evicted before.
 * The ratio is the slowest tenth over the fastest, measured in the same run, in CPU time of this
 * process (`process.cpuUsage`, user + system): on a shared machine wall time moves with whatever
 * else runs, CPU time much less. Wall time is reported beside it. Memory per key is
 * the heap and array-buffer growth of a full store (after GC) over maxKeys.
 *
 * A reference with the recency order of a Map's insertion order (delete + set on use,
 * `map.keys().next()` to evict: what MemoryStore did before) runs beside it at the smallest
 * maxKeys, on a shorter churn: its cost per check grows with the deletes in front of the Map.
 *
 *   node suites/churn.mjs [--quick] [--max-keys 100000,1000000] [--churn 10000000] [--out file.json]
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { loadSluice } from '../lib/sluice.mjs';

const { values: opts } = parseArgs({
  options: {
    'redis-url': { type: 'string' },
    quick: { type: 'boolean', default: false },
    'max-keys': { type: 'string' },
    churn: { type: 'string' },
    'reference-churn': { type: 'string' },
    out: { type: 'string' },
  },
});
const MAX_KEYS = (opts['max-keys'] ?? (opts.quick ? '100000' : '100000,1000000')).split(',').map(Number);
const CHURN = Number(opts.churn ?? (opts.quick ? 1_000_000 : 10_000_000));
const REFERENCE_CHURN = Number(opts['reference-churn'] ?? (opts.quick ? 200_000 : 1_000_000));
const SLICES = 10;

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc');

const { core, missing } = await loadSluice();
if (typeof core.MemoryStore !== 'function') {
  if (opts.out) writeFileSync(opts.out, JSON.stringify({ suite: 'churn', pending: 'MemoryStore', missing }));
  process.exit(0);
}

// 1000 units per hour: every key stays live for the whole run, so every new key evicts a live one.
const policy = core.definePolicy({ name: 'churn', burst: 1000, rate: '1000/h' });
const entryOf = (key) => [{ key, policy, cost: 1 }];
const keyOf = (i) => `sluice:{=user-${i}}:churn`;

/** The old layout's essentials: recency = Map insertion order, evict with keys().next(). */
class MapOrderReference {
  constructor(maxKeys) {
    this.maxKeys = maxKeys;
    this.map = new Map();
  }
  decideSync(entries) {
    const { key } = entries[0];
    const held = this.map.get(key);
    if (held !== undefined) {
      this.map.delete(key);
      this.map.set(key, held + 1);
      return;
    }
    if (this.map.size >= this.maxKeys) {
      for (let i = 0; i < 2; i++) this.map.entries().next(); // the sweep's look at the old end
      this.map.delete(this.map.keys().next().value);
    }
    this.map.set(key, 1);
  }
}

function memoryBytes() {
  gc();
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

/** Fills a store of `maxKeys`, then churns `churn` keys; µs per check per slice. */
function run(make, maxKeys, churn) {
  const before = memoryBytes();
  let store = make(maxKeys);
  let next = 0;
  const fillStart = process.hrtime.bigint();
  for (; next < maxKeys; next++) store.decideSync(entryOf(keyOf(next)), 'consume');
  const fillUs = Number(process.hrtime.bigint() - fillStart) / 1e3 / maxKeys;
  const bytesPerKey = (memoryBytes() - before) / maxKeys;
  const slice = Math.floor(churn / SLICES);
  const usPerCheck = [];
  const wallUsPerCheck = [];
  for (let s = 0; s < SLICES; s++) {
    const t0 = process.hrtime.bigint();
    const cpu0 = process.cpuUsage();
    for (let end = next + slice; next < end; next++) store.decideSync(entryOf(keyOf(next)), 'consume');
    const cpu = process.cpuUsage(cpu0);
    usPerCheck.push((cpu.user + cpu.system) / slice);
    wallUsPerCheck.push(Number(process.hrtime.bigint() - t0) / 1e3 / slice);
  }
  const liveEvictions = store.liveEvictions;
  store = undefined;
  const ratio = Math.max(...usPerCheck) / Math.min(...usPerCheck);
  return { maxKeys, churn, fillUs, usPerCheck, wallUsPerCheck, ratio, bytesPerKey, liveEvictions };
}

const rows = [];
for (const maxKeys of MAX_KEYS) {
  const row = {
    name: `MemoryStore, maxKeys ${maxKeys}`,
    ...run((n) => new core.MemoryStore({ maxKeys: n, clock: () => 1_700_000_000_000 }), maxKeys, CHURN),
  };
  rows.push(row);
  process.stderr.write(
    `${row.name}: fill ${row.fillUs.toFixed(2)} µs, churn ${row.usPerCheck.map((u) => u.toFixed(2)).join(' ')} CPU µs per check (wall ${row.wallUsPerCheck.map((u) => u.toFixed(1)).join(' ')}), slowest/fastest ${row.ratio.toFixed(2)}, ${row.bytesPerKey.toFixed(0)} B per key, ${row.liveEvictions} live evictions\n`,
  );
}
const refKeys = Math.min(...MAX_KEYS);
const reference = {
  name: `Map insertion order (old layout), maxKeys ${refKeys}`,
  ...run((n) => new MapOrderReference(n), refKeys, REFERENCE_CHURN),
};
process.stderr.write(
  `${reference.name}: churn ${reference.usPerCheck.map((u) => u.toFixed(2)).join(' ')} CPU µs per check, slowest/fastest ${reference.ratio.toFixed(2)}\n`,
);
rows.push(reference);

const output = { suite: 'churn', churn: CHURN, referenceChurn: REFERENCE_CHURN, slices: SLICES, rows };
if (opts.out) writeFileSync(opts.out, JSON.stringify(output));
else process.stdout.write(`${JSON.stringify(output, null, 2)}\n`);
