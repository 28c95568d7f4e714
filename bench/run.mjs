/**
 * Runs every benchmark end to end: starts a private redis-server, runs the memory, overhead,
 * script-cost, in-process, overload and HTTP suites (each in its own process), writes bench/results/results.md, results.json and
 * chart.svg, and prints the table.
 *
 *   node bench/run.mjs            full run (about 8-10 minutes on 2 cores)
 *   node bench/run.mjs --quick    smoke run (about 1-2 minutes)
 *   options: --only memory,overhead,script-cost,inproc,overload,http,churn   --out-dir DIR   --prof-dir DIR (CPU profiles of Sluice servers)
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startRedis } from '../test/support/redis-server.js';
import { evaluateTargets, renderMarkdown, renderSvg } from './lib/report.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const { values: opts } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    only: { type: 'string', default: 'memory,overhead,script-cost,inproc,overload,http,churn' },
    'out-dir': { type: 'string' },
    'prof-dir': { type: 'string' },
    'http-only': { type: 'string' },
  },
});
const suites = opts.only.split(',');
const outDir = opts['out-dir'] ?? join(here, 'results');
const work = mkdtempSync(join(tmpdir(), 'sluice-bench-'));
const started = Date.now();
const loadAtStart = loadavg()[0].toFixed(2);

function runSuite(name, args) {
  return new Promise((resolve, reject) => {
    const out = join(work, `${name}.json`);
    process.stderr.write(`\n[${name}]\n`);
    const t0 = Date.now();
    const child = spawn(process.execPath, [join(here, 'suites', `${name}.mjs`), ...args, '--out', out], {
      stdio: ['ignore', 'inherit', 'inherit'],
      cwd: here,
    });
    child.once('exit', (code) => {
      if (code !== 0) return reject(new Error(`suite ${name} exited with ${code}`));
      process.stderr.write(`[${name}: ${Math.round((Date.now() - t0) / 1000)} s]\n`);
      resolve(JSON.parse(readFileSync(out, 'utf8')));
    });
  });
}

const redis = await startRedis();
const results = {};
try {
  const common = ['--redis-url', redis.url, ...(opts.quick ? ['--quick'] : [])];
  if (suites.includes('memory')) results.memory = await runSuite('memory', ['--redis-url', redis.url]);
  if (suites.includes('overhead')) results.overhead = await runSuite('overhead', common);
  if (suites.includes('script-cost')) results.scriptCost = await runSuite('script-cost', common);
  if (suites.includes('inproc')) results.inproc = await runSuite('inproc', common);
  if (suites.includes('overload')) results.overload = await runSuite('overload', common);
  if (suites.includes('churn')) results.churn = await runSuite('churn', opts.quick ? ['--quick'] : []);
  if (suites.includes('http')) {
    results.http = await runSuite('http', [
      ...common,
      ...(opts['prof-dir'] ? ['--prof-dir', opts['prof-dir']] : []),
      ...(opts['http-only'] ? ['--only', opts['http-only']] : []),
    ]);
  }
} finally {
  await redis.stop();
  rmSync(work, { recursive: true, force: true });
}

const redisVersion = spawnSync('redis-server', ['--version'], { encoding: 'utf8' })
  .stdout.trim()
  .split(' ')
  .slice(0, 3)
  .join(' ');
const meta = {
  date: new Date(started).toISOString().replace(/\.\d+Z$/, 'Z'),
  mode: opts.quick ? 'quick' : 'full',
  command: opts.quick ? 'node bench/run.mjs --quick' : 'npm run bench',
  node: process.version,
  redis: redisVersion,
  cpus: cpus().length,
  cpuModel: cpus()[0]?.model?.trim() ?? 'unknown',
  loadAverage: `${loadAtStart} at start, ${loadavg()[0].toFixed(2)} at the end`,
  seconds: Math.round((Date.now() - started) / 1000),
};
const targets = evaluateTargets(results);
const markdown = renderMarkdown({ meta, ...results, targets });
mkdirSync(outDir, { recursive: true });
writeFileSync(join(outDir, 'results.md'), markdown);
writeFileSync(
  join(outDir, 'chart.svg'),
  renderSvg(targets, `Sluice vs targets (${meta.mode} run, ${meta.date})`),
);
writeFileSync(join(outDir, 'results.json'), `${JSON.stringify({ meta, targets, ...results }, null, 2)}\n`);
process.stdout.write(`\n${markdown}`);
process.stderr.write(
  `\nwrote ${join(outDir, 'results.md')}, chart.svg and results.json in ${meta.seconds} s\n`,
);
