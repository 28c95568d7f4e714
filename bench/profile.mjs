/**
 * CPU profile of one Sluice case under load, summarized as the top self-time functions.
 *
 *   node bench/profile.mjs --http express --store redis --path allowed|deny|concurrent|queued [--seconds 10] [--autopipelining]
 *        [--lease] [--keys uniform|zipf|hot]
 *   node bench/profile.mjs --inproc '^sluice/token-bucket/1p/uniform/allowed$' [--seconds 10]
 *
 * Starts its own redis-server. HTTP: the Sluice server of that framework runs with
 * --cpu-prof while autocannon loads it (random x-api-key of 10k for every path but deny, or `--keys`;
 * `--lease`: the leased policy of the HTTP suite).
 * In-process: the in-process suite runs that case alone under --cpu-prof.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startRedis } from '../test/support/redis-server.js';
import { LEASE_ARGS, loadLimited, startServerProcess, stopServerProcess } from './lib/http-server.mjs';
import { summarizeProfile } from './lib/profile-summary.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const { values: opts } = parseArgs({
  options: {
    http: { type: 'string' },
    store: { type: 'string', default: 'redis' },
    path: { type: 'string', default: 'allowed' },
    variant: { type: 'string', default: 'sluice' },
    inproc: { type: 'string' },
    seconds: { type: 'string', default: '10' },
    top: { type: 'string', default: '25' },
    autopipelining: { type: 'boolean', default: false },
    lease: { type: 'boolean', default: false },
    keys: { type: 'string', default: 'uniform' },
  },
});
const seconds = Number(opts.seconds);
const dir = mkdtempSync(join(tmpdir(), 'sluice-prof-'));
const redis = await startRedis();

/** Runs a Node script as a child; its output other than stderr is not needed. */
function run(args) {
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'inherit'], cwd: here });
  return { child, exited: new Promise((r) => child.once('exit', r)) };
}

try {
  if (opts.http) {
    const server = await startServerProcess(
      [
        '--framework',
        opts.http,
        '--variant',
        opts.variant,
        '--store',
        opts.store,
        '--path',
        opts.path,
        '--redis-url',
        redis.url,
        ...(opts.autopipelining ? ['--autopipelining'] : []),
        ...(opts.lease ? LEASE_ARGS : []),
      ],
      { nodeArgs: ['--cpu-prof', '--cpu-prof-dir', dir], label: opts.http },
    );
    const result = await loadLimited({
      port: server.port,
      seconds,
      allowed: opts.path !== 'deny',
      keys: opts.keys,
    });
    console.log(
      `${opts.http}/${opts.variant}/${opts.store}${opts.lease ? '/leased' : ''}/${opts.path}/${opts.keys} keys: ${Math.round(result.requests.average)} req/s`,
    );
    await stopServerProcess(server);
  } else if (opts.inproc) {
    const suite = run([
      '--cpu-prof',
      '--cpu-prof-dir',
      dir,
      join(here, 'suites', 'inproc.mjs'),
      '--redis-url',
      redis.url,
      '--only',
      opts.inproc,
      '--rounds',
      '1',
      '--duration-ms',
      String(seconds * 1000),
    ]);
    await suite.exited;
  } else {
    throw new Error('give --http <framework> or --inproc <case regex>');
  }
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'))) {
    console.log(`\ntop self time (share of busy samples), ${file}:`);
    for (const r of summarizeProfile(join(dir, file), Number(opts.top))) {
      console.log(`${(r.share * 100).toFixed(1).padStart(5)}%  ${r.name}  ${r.url}:${r.line}`);
    }
  }
} finally {
  await redis.stop();
  rmSync(dir, { recursive: true, force: true });
}
process.exit(0);
