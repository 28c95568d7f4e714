/**
 * Instructions per request of one layer of Sluice, in-process, for two builds side by side: the
 * Sluice limiter alone (`limiter.check`; `limiter-settle`: a check that reserves, then its settle)
 * or a Hono app answering `app.fetch(new Request(...))`
 * (`hono`, and `hono-baseline` without the limiter). No sockets, no load generator: what is
 * counted is the code's own work, which repeats within about 1% when the two trees are counted
 * alternately (`node --single-threaded`: V8 compiles and collects on the counted thread, so
 * background threads do not move the count). Finer than bench/instructions.mjs, whose HTTP counts
 * repeat within a few percent, for changes of a few hundred instructions.
 *
 *   node bench/inproc-instructions.mjs --trees /path/to/before,/path/to/after
 *        [--layers limiter,limiter-settle,hono,hono-baseline] [--paths allowed,deny] [--store memory|redis]
 *        [--rounds 2] [--warmup 30000] [--iterations 10000]
 *
 * Each tree must be built (`npm run build`). `--store redis` starts its own redis-server (use
 * `--warmup 8000 --iterations 4000`: a sequential round trip per request is slow under valgrind).
 * Prints one line per count and the median of each case. Needs valgrind.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startRedis } from '../test/support/redis-server.js';

const here = dirname(fileURLToPath(import.meta.url));
const { values: opts } = parseArgs({
  options: {
    trees: { type: 'string' },
    layers: { type: 'string', default: 'limiter,hono' },
    paths: { type: 'string', default: 'allowed,deny' },
    store: { type: 'string', default: 'memory' },
    rounds: { type: 'string', default: '2' },
    warmup: { type: 'string', default: '30000' },
    iterations: { type: 'string', default: '10000' },
  },
});
const fail = (message) => {
  console.error(`inproc-instructions: ${message}`);
  process.exit(2);
};
if (opts.trees === undefined) fail('--trees is required: two or more built trees, comma-separated');
const trees = opts.trees.split(',');
const layers = opts.layers.split(',');
const paths = opts.paths.split(',');
for (const l of layers)
  if (!['limiter', 'limiter-settle', 'hono', 'hono-baseline'].includes(l))
    fail(`--layers: unknown layer ${l}`);
for (const p of paths) if (p !== 'allowed' && p !== 'deny') fail(`--paths: allowed or deny, got ${p}`);
if (opts.store !== 'memory' && opts.store !== 'redis')
  fail(`--store must be memory or redis, got ${opts.store}`);
for (const name of ['rounds', 'warmup', 'iterations']) {
  const n = Number(opts[name]);
  if (!Number.isInteger(n) || n < 1) fail(`--${name} must be a positive integer, got ${opts[name]}`);
}
if (spawnSync('valgrind', ['--version']).status !== 0)
  fail('valgrind is not installed (apt-get install -y valgrind)');

const redis = opts.store === 'redis' ? await startRedis() : undefined;

/** The counted thread's instructions per request of one layer of one tree. */
function count(root, layer, path) {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-layer-'));
  try {
    const args = [
      '--tool=callgrind',
      '--separate-threads=yes',
      '--instr-atstart=no',
      `--callgrind-out-file=${join(dir, 'cg.out')}`,
      process.execPath,
      '--single-threaded',
      join(here, 'lib', 'layer-probe.mjs'),
      `--root=${root}`,
      `--layer=${layer}`,
      `--path=${path}`,
      `--warmup=${opts.warmup}`,
      `--iterations=${opts.iterations}`,
      ...(redis ? [`--redis-url=${redis.url}`] : []),
    ];
    const out = spawnSync('valgrind', args, { encoding: 'utf8' });
    if (out.status !== 0) throw new Error(`valgrind exited with ${out.status}: ${out.stderr.slice(-500)}`);
    const dump = readdirSync(dir).find((f) => /\.1-01$/.test(f));
    if (dump === undefined) throw new Error('no dump of the main thread');
    const m = /^(?:summary|totals): (\d+)/m.exec(readFileSync(join(dir, dump), 'utf8'));
    if (!m) throw new Error(`no instruction total in ${dump}`);
    return Number(m[1]) / Number(opts.iterations);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
try {
  for (const layer of layers) {
    for (const path of paths) {
      const counts = trees.map(() => []);
      for (let r = 0; r < Number(opts.rounds); r++) {
        trees.forEach((tree, t) => {
          const n = count(tree, layer, path);
          counts[t].push(n);
          console.log(`${layer} ${path} ${opts.store} ${tree}: ${Math.round(n)}`);
        });
      }
      const first = median(counts[0]);
      const summary = trees.map((tree, t) => {
        const m = median(counts[t]);
        const change =
          t === 0 ? '' : ` (${m >= first ? '+' : ''}${((100 * (m - first)) / first).toFixed(1)}%)`;
        return `${tree} ${Math.round(m)}${change}`;
      });
      console.log(`median ${layer} ${path} ${opts.store}: ${summary.join(', ')}`);
    }
  }
} finally {
  await redis?.stop();
}
