/**
 * In-process suite: decisions per second and latency of one Node process making rate-limit
 * decisions against Redis with 256 in flight, and one token bucket at 1, 8, 32 and 256 in flight
 * (the in-flight sweep: Sluice, rate-limiter-flexible and the minimal token-bucket script).
 *
 *   node suites/inproc.mjs --redis-url redis://127.0.0.1:PORT [--quick] [--only <regex>] [--out file.json]
 *     [--in-flight 1,8,32,256]
 *
 * Libraries:
 * - sluice: `limiter.check()` with the Redis store from `createRedisStore(url)`;
 * - floor: raw ioredis EVALSHA of Sluice's own decide script with the same KEYS/ARGV
 *   (precomputed per key: nothing but the client and Redis);
 * - rlf: rate-limiter-flexible's RateLimiterRedis `consume` on its own ioredis client;
 * - minimal: the least token-bucket script (lib/minimal-token-bucket.mjs: HMGET, the arithmetic,
 *   HSET + PEXPIRE), raw EVALSHA (in-flight sweep only).
 * Then a short MONITOR phase counts the commands each decision sends to Redis.
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { RateLimiterRedis, RateLimiterUnion } from 'rate-limiter-flexible';
import { runClosedLoop } from '../lib/load.mjs';
import { MINIMAL_TOKEN_BUCKET_SCRIPT } from '../lib/minimal-token-bucket.mjs';
import { monitorCommands } from '../lib/monitor.mjs';
import { redisCpuSeconds } from '../lib/redis-cpu.mjs';
import { redisScriptStats } from '../lib/redis-script-calls.mjs';
import { loadSluice, storageKey } from '../lib/sluice.mjs';
import { median } from '../lib/stats.mjs';

const { values: opts } = parseArgs({
  options: {
    'redis-url': { type: 'string' },
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
    out: { type: 'string' },
    'duration-ms': { type: 'string' },
    rounds: { type: 'string' },
    'in-flight': { type: 'string', default: '1,8,32,256' },
  },
});
const redisUrl = opts['redis-url'];
if (!redisUrl) throw new Error('--redis-url is required');
const port = Number(new URL(redisUrl).port);
const durationMs = Number(opts['duration-ms'] ?? (opts.quick ? 250 : 800));
const warmupMs = opts.quick ? 100 : 200;
const CONCURRENCY = 256;
/** Checks in flight of the sweep's groups (one token bucket, 10k keys, allowed). */
const IN_FLIGHT = opts['in-flight']
  .split(',')
  .filter(Boolean)
  .map((n) => {
    const value = Number(n);
    if (!Number.isInteger(value) || value < 1) throw new Error(`--in-flight: not a positive integer: ${n}`);
    return value;
  });
const KEY_COUNT = 10_000;
const ALGORITHMS = ['token-bucket', 'gcra', 'sliding-window', 'fixed-window', 'sliding-log'];
const ids = Array.from({ length: KEY_COUNT }, (_, i) => `user-${String(i).padStart(5, '0')}`);
const HOT = 'hot-tenant';

const { core, node, missing } = await loadSluice();
const hasLimiter = !missing.some((m) => m.startsWith('createLimiter') || m.startsWith('@sluice/core/node'));
const hasScript = core.DECIDE_SCRIPT !== undefined && typeof core.encodeScriptArgs === 'function';
const admin = new Redis(redisUrl, { lazyConnect: false });

/**
 * Policy inputs for a case: "allowed" never runs out during a run, "denied" is spent in one
 * request. A sliding log holds at most SLIDING_LOG_MAX_LIMIT (500) units per window; the
 * uniform cases charge each of the 10k keys well under that in a run.
 */
function policyInputs(algorithm, count, path) {
  const most = algorithm === 'sliding-log' ? 500 : Number.POSITIVE_INFINITY;
  const limit = path === 'allowed' ? Math.min(1_000_000, most) : 1;
  const list = [{ name: 'p1', algorithm, limit, window: '1h' }];
  if (count === 2)
    list.push({
      name: 'p2',
      algorithm,
      limit: path === 'allowed' ? Math.min(2_000_000, most) : 1,
      window: '1d',
    });
  return list;
}

const identityAt = (keys) => (keys === 'hot' ? () => HOT : (i) => ids[i % KEY_COUNT]);

/**
 * Comparison groups: the cases inside a group are measured in alternation, several short
 * rounds each, so that load from other processes on the machine hits them alike; ratios are
 * taken within a round and their median reported.
 */
function groups() {
  const list = [];
  let n = 0;
  const prefix = () => `b${n++}`;
  const U1A = { policies: 1, keys: 'uniform', path: 'allowed' };
  const U2A = { policies: 2, keys: 'uniform', path: 'allowed' };
  const H1A = { policies: 1, keys: 'hot', path: 'allowed' };
  const U1D = { policies: 1, keys: 'uniform', path: 'denied' };
  const H1D = { policies: 1, keys: 'hot', path: 'denied' };
  const floor = (algorithm, v) => ({
    library: 'floor',
    algorithm,
    ...v,
    setup: () => floorCase(algorithm, v, prefix()),
  });
  const floorPipelined = (algorithm, v) => ({
    library: 'floor',
    variant: 'autopipelining',
    algorithm,
    ...v,
    setup: () => floorCase(algorithm, v, prefix(), true),
  });
  const sluice = (algorithm, v, denyCache = true) => ({
    library: 'sluice',
    ...(denyCache ? {} : { variant: 'no-deny-cache' }),
    algorithm,
    ...v,
    setup: () => sluiceCase(algorithm, v, prefix(), denyCache),
  });
  const sluicePipelined = (algorithm, v) => ({
    library: 'sluice',
    variant: 'autopipelining',
    algorithm,
    ...v,
    setup: () => sluiceCase(algorithm, v, prefix(), true, true),
  });
  const rlf = (v, inMemoryBlock = false) => ({
    library: 'rlf',
    ...(inMemoryBlock ? { variant: 'inMemoryBlockOnConsumed' } : {}),
    algorithm: 'fixed-window',
    ...v,
    setup: () => rlfCase(v, prefix(), inMemoryBlock),
  });
  for (const algorithm of ALGORITHMS) {
    const full = algorithm === 'token-bucket';
    list.push({
      name: `${algorithm} 1 policy, 10k keys, allowed`,
      cases: [
        floor(algorithm, U1A),
        sluice(algorithm, U1A),
        rlf(U1A),
        ...(full ? [sluicePipelined(algorithm, U1A), floorPipelined(algorithm, U1A)] : []),
      ],
    });
    list.push({
      name: `${algorithm} 2 policies, 10k keys, allowed`,
      cases: [
        floor(algorithm, U2A),
        sluice(algorithm, U2A),
        sluice(algorithm, U1A),
        ...(full ? [rlf(U2A)] : []),
      ],
    });
    // Hot-key allowed and 10k-key denied paths are not targets: measured for the default algorithm only.
    if (full) {
      list.push({
        name: `${algorithm} 1 policy, hot key, allowed`,
        cases: [floor(algorithm, H1A), sluice(algorithm, H1A), ...(full ? [rlf(H1A)] : [])],
      });
      list.push({
        name: `${algorithm} 1 policy, 10k keys, denied`,
        cases: [
          floor(algorithm, U1D),
          sluice(algorithm, U1D),
          sluice(algorithm, U1D, false),
          ...(full ? [rlf(U1D)] : []),
        ],
      });
    }
    list.push({
      name: `${algorithm} 1 policy, hot key, denied`,
      cases: [
        floor(algorithm, H1D),
        sluice(algorithm, H1D),
        sluice(algorithm, H1D, false),
        ...(full ? [rlf(H1D), rlf(H1D, true)] : []),
      ],
    });
  }
  // The in-flight sweep: where services live (1, 8, 32 checks in flight) as well as 256.
  const minimal = (v) => ({
    library: 'minimal',
    algorithm: 'token-bucket',
    ...v,
    setup: () => minimalCase(v, prefix()),
  });
  for (const inFlight of IN_FLIGHT) {
    const v = { ...U1A, inFlight };
    list.push({
      name: `token-bucket 1 policy, 10k keys, allowed, ${inFlight} in flight`,
      inFlight,
      cases: [sluice('token-bucket', v), rlf(v), minimal(v)],
    });
  }
  for (const g of list) {
    for (const c of g.cases) {
      c.id = [
        c.library,
        c.variant,
        c.algorithm,
        `${c.policies}p`,
        c.keys,
        c.path,
        c.inFlight === undefined ? undefined : `in-flight-${c.inFlight}`,
      ]
        .filter(Boolean)
        .join('/');
    }
  }
  return list;
}

let sluiceStore;
let pipelinedStore;
/** A store whose ioredis client has enableAutoPipelining on (writes batched per event-loop tick). */
async function autoPipelinedStore() {
  pipelinedStore ??= node.createRedisStore(redisUrl, { redisOptions: { enableAutoPipelining: true } });
  return pipelinedStore;
}
/** One store (one ioredis connection, as an application has) for every Sluice case, connected and warm. */
async function sharedStore() {
  if (sluiceStore === undefined) {
    sluiceStore = node.createRedisStore(redisUrl);
    const warm = core.createLimiter({
      policies: [{ name: 'warm', limit: 10, window: '1s' }],
      store: sluiceStore,
      prefix: 'warm',
    });
    for (let i = 0; i < 3; i++) {
      const d = await warm.check({ identity: 'warm' });
      if (d.outcome === 'unavailable')
        throw new Error('the Sluice Redis store did not answer while warming up');
    }
  }
  return sluiceStore;
}

async function sluiceCase(algorithm, v, prefix, denyCache, autoPipelining = false) {
  if (!hasLimiter) return { pending: 'limiter or createRedisStore not built yet' };
  const limiter = core.createLimiter({
    policies: policyInputs(algorithm, v.policies, v.path),
    store: autoPipelining ? await autoPipelinedStore() : await sharedStore(),
    prefix,
    // The floor and rate-limiter-flexible have no deadline; a generous one keeps every measured
    // decision a real store decision on a loaded machine (the default is 100 ms).
    timeoutMs: 2000,
    ...(denyCache ? {} : { denyCache: false }),
  });
  const identity = identityAt(v.keys);
  const descriptors = v.keys === 'hot' ? [{ identity: HOT }] : ids.map((id) => ({ identity: id }));
  const counts = { allowed: 0, denied: 0, unavailable: 0 };
  if (v.path === 'denied') await prefill((i) => limiter.check({ identity: identity(i) }), v.keys);
  return {
    counts,
    op: async (i) => {
      const d = await limiter.check(descriptors[i % descriptors.length]);
      if (d.allowed) counts.allowed++;
      else if (d.outcome === 'unavailable') counts.unavailable++;
      else counts.denied++;
    },
  };
}

async function floorCase(algorithm, v, prefix, autoPipelining = false) {
  if (!hasScript || typeof core.definePolicy !== 'function')
    return { pending: 'DECIDE_SCRIPT/encodeScriptArgs not built yet' };
  const client = new Redis(redisUrl, autoPipelining ? { enableAutoPipelining: true } : {});
  const policies = policyInputs(algorithm, v.policies, v.path).map((p) => core.definePolicy(p));
  const identities = v.keys === 'hot' ? [HOT] : ids;
  const entriesOf = (id) =>
    policies.map((policy) => ({ key: storageKey(core, prefix, id, policy), policy, cost: 1 }));
  // The script RedisStore picks for these policies (one algorithm's own, where the build has them).
  const script = core.decideScriptFor?.(entriesOf(identities[0])) ?? core.DECIDE_SCRIPT;
  const sha = script.sha1;
  await client.script('LOAD', script.source);
  const calls = identities.map((id) => {
    const entries = entriesOf(id);
    return [sha, entries.length, ...entries.map((e) => e.key), ...core.encodeScriptArgs(entries, 'consume')];
  });
  if (v.path === 'denied') await prefill((i) => client.evalsha(...calls[i % calls.length]), v.keys);
  return {
    op: (i) => client.evalsha(...calls[i % calls.length]),
    close: () => client.quit(),
  };
}

/** The minimal token-bucket script (lib/minimal-token-bucket.mjs) on its own client: the floor of a bucket. */
async function minimalCase(v, prefix) {
  const client = new Redis(redisUrl);
  const sha = await client.script('LOAD', MINIMAL_TOKEN_BUCKET_SCRIPT);
  // The Sluice policy of the same case: limit 1e6 per hour, one unit earned back every 3.6 ms.
  const intervalMs = String(3_600_000 / 1_000_000);
  const identity = identityAt(v.keys);
  const keys = ids.map((id) => `${prefix}:{${id}}:p1`);
  return {
    op: (i) =>
      client.evalsha(
        sha,
        1,
        v.keys === 'hot' ? `${prefix}:{${identity(i)}}:p1` : keys[i % KEY_COUNT],
        '1000000',
        intervalMs,
      ),
    close: () => client.quit(),
  };
}

async function rlfCase(v, prefix, inMemoryBlock) {
  const client = new Redis(redisUrl);
  const make = (name, points, duration) =>
    new RateLimiterRedis({
      storeClient: client,
      keyPrefix: `${prefix}${name}`,
      points,
      duration,
      ...(inMemoryBlock ? { inMemoryBlockOnConsumed: points, inMemoryBlockDuration: duration } : {}),
    });
  const allowed = v.path === 'allowed';
  const first = make('p1', allowed ? 1_000_000 : 1, 3600);
  const limiter =
    v.policies === 2 ? new RateLimiterUnion(first, make('p2', allowed ? 2_000_000 : 1, 86_400)) : first;
  const identity = identityAt(v.keys);
  const counts = { allowed: 0, denied: 0, unavailable: 0 };
  const consume = (i) =>
    limiter.consume(identity(i)).then(
      () => {
        counts.allowed++;
      },
      (rejection) => {
        if (rejection instanceof Error) throw rejection;
        counts.denied++;
      },
    );
  if (!allowed) await prefill(consume, v.keys);
  counts.allowed = 0;
  counts.denied = 0;
  return { op: consume, counts, close: () => client.quit() };
}

/** Spends every key once (uniform) or a few times (hot) so the measured path is the denied one. */
async function prefill(op, keys) {
  // Twice over: the first pass spends each key, the second gets it denied once (as in steady state).
  const total = keys === 'hot' ? 4 : (opts.quick ? 1 : 2) * KEY_COUNT;
  for (let start = 0; start < total; start += CONCURRENCY) {
    const batch = [];
    for (let i = start; i < Math.min(total, start + CONCURRENCY); i++) batch.push(op(i).catch(() => {}));
    await Promise.all(batch);
  }
}

/** Runs `op` exactly `count` times with up to 256 in flight. */
async function runCount(op, count, concurrency = CONCURRENCY) {
  let next = 0;
  const worker = async () => {
    while (next < count) await op(next++);
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

const ROUNDS = Number(opts.rounds ?? (opts.quick ? 1 : 3));
const results = [];
const pattern = opts.only ? new RegExp(opts.only) : undefined;
// Warm the JIT on every library's path first, so the first group measured is not the coldest.
{
  const all = groups();
  const first = all[0].cases.filter((c) => !pattern || pattern.test(c.id));
  await admin.flushall();
  for (const c of first) {
    const r = await c.setup();
    if (r.pending) continue;
    await runClosedLoop(r.op, { concurrency: CONCURRENCY, warmupMs: 0, durationMs: opts.quick ? 300 : 1000 });
    await r.close?.();
  }
}
for (const group of groups()) {
  const cases = group.cases.filter((c) => !pattern || pattern.test(c.id));
  if (cases.length === 0) continue;
  process.stderr.write(`  ${group.name}\n`);
  await admin.flushall();
  const ready = [];
  for (const c of cases) {
    const { setup, ...meta } = c;
    const r = await setup();
    if (r.pending) {
      results.push({ ...meta, group: group.name, pending: r.pending });
      process.stderr.write(`    ${c.id}: pending (${r.pending})\n`);
    } else {
      ready.push({ meta, ...r, rounds: [] });
    }
  }
  for (let round = 0; round < ROUNDS; round++) {
    // Rotate the order every round so no case always runs first or last.
    for (let k = 0; k < ready.length; k++) {
      const c = ready[(k + round) % ready.length];
      if (c.counts) for (const key of Object.keys(c.counts)) c.counts[key] = 0;
      const before = await redisScriptStats(admin);
      const cpuBefore = await redisCpuSeconds(admin);
      const r = await runClosedLoop(c.op, {
        concurrency: c.meta.inFlight ?? CONCURRENCY,
        warmupMs,
        durationMs,
      });
      const cpuAfter = await redisCpuSeconds(admin);
      const after = await redisScriptStats(admin);
      // Redis process CPU (all of it, network included) per operation over warm-up + measurement.
      r.redisCpuUsPerOp = ((cpuAfter - cpuBefore) * 1e6) / Math.max(1, r.started);
      // Redis time per script call (includes the commands the script runs): the server's share of a decision.
      r.redisUsPerCall =
        after.calls > before.calls ? (after.usec - before.usec) / (after.calls - before.calls) : Number.NaN;
      const counted = c.counts ? c.counts.allowed + c.counts.denied + c.counts.unavailable : 0;
      // Script calls per decision (a batch carries several decisions in one call).
      r.callsPerOp = (after.calls - before.calls) / Math.max(1, r.started);
      c.rounds.push({
        ...r,
        allowedShare: counted > 0 ? c.counts.allowed / counted : undefined,
        unavailable: c.counts?.unavailable,
      });
    }
  }
  for (const c of ready) {
    await c.close?.();
    const per = c.rounds.map((r) => r.perSecond);
    const pick = (f) => median(c.rounds.map(f));
    const row = {
      ...c.meta,
      group: group.name,
      perSecond: median(per),
      perRound: per,
      p50PerRound: c.rounds.map((r) => r.p50Us),
      redisCpuPerRound: c.rounds.map((r) => r.redisCpuUsPerOp),
      redisUsPerCallPerRound: c.rounds.map((r) => r.redisUsPerCall),
      p50Us: pick((r) => r.p50Us),
      p99Us: pick((r) => r.p99Us),
      cpuUsPerOp: pick((r) => r.cpuUsPerOp),
      redisUsPerCall: pick((r) => r.redisUsPerCall),
      redisCpuUsPerOp: pick((r) => r.redisCpuUsPerOp),
      callsPerOp: pick((r) => r.callsPerOp),
      errors: c.rounds.reduce((t, r) => t + r.errors, 0),
      allowedShare: c.rounds[0].allowedShare === undefined ? undefined : pick((r) => r.allowedShare),
      unavailable: c.rounds.reduce((t, r) => t + (r.unavailable ?? 0), 0),
    };
    results.push(row);
    process.stderr.write(
      `    ${c.meta.id}: ${Math.round(row.perSecond)}/s [${per.map((x) => Math.round(x / 1000)).join(' ')}k] p50 ${row.p50Us.toFixed(0)}µs p99 ${row.p99Us.toFixed(0)}µs cpu ${row.cpuUsPerOp.toFixed(1)}µs/op redis ${row.redisUsPerCall.toFixed(1)}µs/call, cpu ${row.redisCpuUsPerOp.toFixed(1)}µs/op` +
        `${row.allowedShare === undefined ? '' : ` allowed ${(row.allowedShare * 100).toFixed(1)}%`}` +
        `${row.unavailable ? ` unavailable ${row.unavailable}` : ''}${row.errors ? ` errors ${row.errors}` : ''}\n`,
    );
  }
}

// Round trips: commands each decision sends to Redis, counted by Redis (MONITOR, client commands only).
// One decision at a time, every decision must be exactly one command; with CONCURRENCY in flight
// Sluice batches the decisions of one event-loop turn into one call, so commands per decision
// drop below one (each decision still rides in exactly one call).
const roundTrips = [];
if (!pattern || pattern.test('roundtrips')) {
  const DECISIONS = opts.quick ? 500 : 2000;
  const rtCases = [];
  for (const algorithm of ALGORITHMS) {
    for (const policies of [1, 2]) {
      rtCases.push({
        library: 'sluice',
        algorithm,
        policies,
        setup: () =>
          sluiceCase(algorithm, { policies, keys: 'uniform', path: 'allowed' }, `rt${rtCases.length}`, true),
      });
    }
  }
  for (const policies of [1, 2]) {
    rtCases.push({
      library: 'rlf',
      algorithm: 'fixed-window',
      policies,
      setup: () => rlfCase({ policies, keys: 'uniform', path: 'allowed' }, `rt${rtCases.length}`, false),
    });
  }
  for (const c of rtCases) {
    const { setup, ...meta } = c;
    await admin.flushall();
    const ready = await setup();
    if (ready.pending) {
      roundTrips.push({ ...meta, pending: ready.pending });
      continue;
    }
    await runCount(ready.op, CONCURRENCY); // warm: connection up, script loaded
    const monitor = await monitorCommands(port);
    await runCount(ready.op, DECISIONS, 1);
    const seen = await monitor.stop();
    const concurrentMonitor = await monitorCommands(port);
    await runCount(ready.op, DECISIONS);
    const concurrent = await concurrentMonitor.stop();
    await ready.close?.();
    roundTrips.push({
      ...meta,
      decisions: DECISIONS,
      commands: seen.total,
      perDecision: seen.total / DECISIONS,
      byCommand: seen.byCommand,
      concurrentCommands: concurrent.total,
      concurrentPerDecision: concurrent.total / DECISIONS,
    });
    process.stderr.write(
      `  round trips ${meta.library}/${meta.algorithm}/${meta.policies}p: ${(seen.total / DECISIONS).toFixed(3)} per decision one at a time ${JSON.stringify(seen.byCommand)}, ${(concurrent.total / DECISIONS).toFixed(3)} with ${CONCURRENCY} in flight\n`,
    );
  }
}

const output = {
  suite: 'inproc',
  concurrency: CONCURRENCY,
  inFlight: IN_FLIGHT,
  keys: KEY_COUNT,
  durationMs,
  rounds: ROUNDS,
  missing,
  results,
  roundTrips,
};
if (opts.out) writeFileSync(opts.out, JSON.stringify(output, null, 2));
else process.stdout.write(`${JSON.stringify(output)}\n`);
await admin.quit();
process.exit(0);
