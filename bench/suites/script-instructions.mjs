/**
 * Redis's own instructions per decide-script call, two builds of @sluice/core side by side: the
 * redis-server runs under valgrind's callgrind with instrumentation switched on only for the
 * measured calls (after a warm-up), so the count is the script's and Redis's work per call and
 * does not move with the machine's load (INFO commandstats µs on this shared 2-core box move by
 * tens of percent between rounds). Each build sends its own script with its own codec
 * (`ScriptCall`, or `DecideCall` in earlier builds), so a change of the script's arguments is
 * measured as callers see it. A base build is a copy of `packages/core/dist` made at the base
 * revision (`git stash; npm run build -w @sluice/core; cp -r packages/core/dist /tmp/base-dist`).
 *
 *   node bench/suites/script-instructions.mjs --base-dist /tmp/base-dist [--dist packages/core/dist] [--calls 3000]
 *     [--cases <regex>] [--keep-out]
 *
 * --keep-out leaves each run's callgrind output and prints its path (for `callgrind_annotate`).
 *
 * Each call goes to the script its build sends for it (`ScriptCall.script()`: the algorithm's own
 * decide script where the build has them, else the full one). Beside the builds, once: the minimal
 * token-bucket script (bench/lib/minimal-token-bucket.mjs: HMGET, the arithmetic, HSET + PEXPIRE),
 * the floor an unbatched call of a plain token bucket is compared with.
 *
 * Needs valgrind (Debian package `valgrind`). About a minute per case and build.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { freePort } from '../../test/support/free-port.js';
import { MINIMAL_TOKEN_BUCKET_SCRIPT } from '../lib/minimal-token-bucket.mjs';
import { coreOfBuild } from '../lib/sluice.mjs';

const { values: opts } = parseArgs({
  options: {
    'base-dist': { type: 'string' },
    dist: { type: 'string', default: join(import.meta.dirname, '..', '..', 'packages', 'core', 'dist') },
    calls: { type: 'string', default: '3000' },
    cases: { type: 'string' },
    'keep-out': { type: 'boolean', default: false },
  },
});
if (opts['base-dist'] === undefined) {
  console.error(
    'script-instructions: --base-dist DIR (a built packages/core/dist of the base revision) is required',
  );
  process.exit(2);
}
const load = async (dir) => {
  const { module, error } = await coreOfBuild(pathToFileURL(join(dir, 'index.js')).href);
  if (error) throw new Error(`${dir}: ${error}`);
  return module;
};
const variants = { base: await load(opts['base-dist']), new: await load(opts.dist) };
const N = Number(opts.calls);
const ids = Array.from({ length: 10_000 }, (_, i) => `user-${String(i).padStart(5, '0')}`);

async function measure(core, name, run) {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'shadow-cg-'));
  const child = spawn(
    'valgrind',
    [
      '--tool=callgrind',
      '--instr-atstart=no',
      `--callgrind-out-file=${dir}/cg.out`,
      'redis-server',
      '--bind',
      '127.0.0.1',
      '--port',
      String(port),
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      dir,
    ],
    { stdio: 'ignore' },
  );
  const client = new Redis(port, '127.0.0.1', { retryStrategy: () => 200 });
  client.on('error', () => {}); // refused while valgrind starts the server: retried
  for (;;) {
    try {
      await client.ping();
      break;
    } catch {
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  for (const script of core.DECIDE_SCRIPTS ?? [core.DECIDE_SCRIPT])
    await client.script('LOAD', script.source);
  await run(client, 500, 'w'); // warm-up: keys exist, as in steady state
  spawnSync('callgrind_control', ['-i', 'on', String(child.pid)]);
  const calls = await run(client, N, 'm');
  spawnSync('callgrind_control', ['-d', String(child.pid)]);
  spawnSync('callgrind_control', ['-i', 'off', String(child.pid)]);
  client.disconnect();
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  let total = 0;
  for (const f of readdirSync(dir).filter((f) => f === 'cg.out.1')) {
    const m = /^totals: (\d+)/m.exec(readFileSync(join(dir, f), 'utf8'));
    if (m) total += Number(m[1]);
  }
  if (opts['keep-out']) console.log(`  ${name}: callgrind output ${join(dir, 'cg.out.1')}`);
  return { name, perCall: total / calls.calls, perUnit: total / calls.units, unit: calls.unit };
}

function cases(core) {
  const tb = core.definePolicy({ name: 'tb', burst: 1_000_000, rate: '1000/s' });
  const tb2 = core.definePolicy({ name: 'tb2', burst: 2_000_000, rate: '2000/s' });
  const sw = core.definePolicy({ name: 'sw', algorithm: 'sliding-window', limit: 1_000_000, window: '1h' });
  const fw = core.definePolicy({
    name: 'rule-0',
    algorithm: 'fixed-window',
    limit: 1_000_000_000,
    window: '1h',
  });
  const Call = core.ScriptCall ?? core.DecideCall;
  const send = (client, call) =>
    client.evalsha(
      (call.script?.() ?? core.DECIDE_SCRIPT).sha1,
      call.keys.length,
      ...call.keys,
      ...call.args(),
    );
  const inFlight = async (n, op) => {
    for (let i = 0; i < n; i += 64)
      await Promise.all(Array.from({ length: Math.min(64, n - i) }, (_, j) => op(i + j)));
  };
  return {
    'token bucket, short form': async (client, n) => {
      await inFlight(n, (i) => {
        const c = new Call('');
        c.add([{ key: `s:{${ids[i % ids.length]}}:tb`, policy: tb, cost: 1 }], 'consume');
        return send(client, c);
      });
      return { calls: n, units: n, unit: 'decision' };
    },
    // The rate limit service's traffic for an envoyproxy/ratelimit-style rule: one fixed-window
    // counter per descriptor, one call per decision (1 in flight) or batched (64 in flight).
    'fixed window, one call per decision (unbatched)': async (client, n) => {
      await inFlight(n, (i) => {
        const c = new Call('');
        c.add([{ key: `rls:{appbench}:tenant=${ids[i % ids.length]}`, policy: fw, cost: 1 }], 'consume');
        return send(client, c);
      });
      return { calls: n, units: n, unit: 'decision' };
    },
    'batch of 64 fixed-window decisions': async (client, n) => {
      const calls = Math.ceil(n / 64);
      await inFlight(calls, (i) => {
        const c = new Call('');
        for (let j = 0; j < 64; j++)
          c.add(
            [{ key: `rls:{appbench}:tenant=${ids[(i * 64 + j) % ids.length]}`, policy: fw, cost: 1 }],
            'consume',
          );
        return send(client, c);
      });
      return { calls, units: calls * 64, unit: 'decision' };
    },
    'token bucket + sliding window, full form': async (client, n) => {
      await inFlight(n, (i) => {
        const c = new Call('');
        const id = ids[i % ids.length];
        c.add(
          [tb, sw].map((p) => ({ key: `f:{${id}}:${p.name}`, policy: p, cost: 1 })),
          'consume',
        );
        return send(client, c);
      });
      return { calls: n, units: n, unit: 'decision' };
    },
    ...Object.fromEntries(
      [8, 32, 128].map((size) => [
        `batch of ${size} short-form decisions`,
        async (client, n) => {
          const calls = Math.ceil(n / size);
          await inFlight(calls, (i) => {
            const c = new Call('');
            for (let j = 0; j < size; j++)
              c.add([{ key: `b:{${ids[(i * size + j) % ids.length]}}:tb`, policy: tb, cost: 1 }], 'consume');
            return send(client, c);
          });
          return { calls, units: calls * size, unit: 'decision' };
        },
      ]),
    ),
    'batch of 128 two-policy decisions (token bucket x2)': async (client, n) => {
      const calls = Math.ceil(n / 128);
      await inFlight(calls, (i) => {
        const c = new Call('');
        for (let j = 0; j < 128; j++) {
          const id = ids[(i * 128 + j) % ids.length];
          c.add(
            [tb, tb2].map((p) => ({ key: `t:{${id}}:${p.name}`, policy: p, cost: 1 })),
            'consume',
          );
        }
        return send(client, c);
      });
      return { calls, units: calls * 128, unit: 'decision' };
    },
    'check denied only by a shadow policy (limiter)': async (client, n) => {
      const limiter = core.createLimiter({
        policies: [
          { name: 'tb', burst: 1_000_000, rate: '1000/s' },
          { name: 'probe', algorithm: 'fixed-window', limit: 1, window: '1h', shadow: true },
        ],
        prefix: 'lim',
        store: new core.RedisStore({ client }),
        timeoutMs: 20_000,
        denyCache: false,
      });
      // Each identity's probe is full from the warm-up (the warm-up covers ids 0..499; measured ids repeat them).
      for (let i = 0; i < n; i++) await limiter.check({ identity: ids[i % 500] });
      return { calls: n, units: n, unit: 'check' };
    },
  };
}

const only = opts.cases === undefined ? undefined : new RegExp(opts.cases);
for (const name of Object.keys(cases(variants.base)).filter((n) => only === undefined || only.test(n))) {
  const r = {};
  for (const v of ['base', 'new']) r[v] = await measure(variants[v], name, cases(variants[v])[name]);
  console.log(
    `${name}: ${Math.round(r.base.perUnit)} -> ${Math.round(r.new.perUnit)} Redis instructions per ${r.base.unit} (${(((r.new.perUnit - r.base.perUnit) / r.base.perUnit) * 100).toFixed(2)}%)`,
  );
}

if (only === undefined || only.test('reference INCRBY + EXPIRE')) {
  // envoyproxy/ratelimit's Redis traffic per descriptor: a pipeline of INCRBY and EXPIRE on a key
  // that names its window (one call per decision, as the service's unbatched case; the pipelines of
  // 64 decisions in flight are Redis's per-command work whatever their grouping).
  const reference = await measure(variants.new, 'reference INCRBY + EXPIRE', async (client, n) => {
    const windowStart = Math.floor(Date.now() / 3_600_000) * 3600;
    for (let i = 0; i < n; i += 64)
      await Promise.all(
        Array.from({ length: Math.min(64, n - i) }, (_, j) => {
          const key = `bench_tenant_${ids[(i + j) % ids.length]}_${windowStart}`;
          return client.pipeline().incrby(key, 1).expire(key, 3600).exec();
        }),
      );
    return { calls: n, units: n, unit: 'decision' };
  });
  console.log(`reference INCRBY + EXPIRE: ${Math.round(reference.perUnit)} Redis instructions per decision`);
}

if (only === undefined || only.test('minimal token-bucket script')) {
  const minimal = await measure(variants.new, 'minimal token-bucket script', async (client, n) => {
    const sha1 = await client.script('LOAD', MINIMAL_TOKEN_BUCKET_SCRIPT);
    for (let i = 0; i < n; i += 64)
      await Promise.all(
        Array.from({ length: Math.min(64, n - i) }, (_, j) =>
          client.evalsha(sha1, 1, `min:{${ids[(i + j) % ids.length]}}`, '1000000', '1'),
        ),
      );
    return { calls: n, units: n, unit: 'decision' };
  });
  console.log(`minimal token-bucket script: ${Math.round(minimal.perUnit)} Redis instructions per decision`);
}
