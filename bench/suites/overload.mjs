/**
 * Overload (issue 30): what a concurrency check and a waiting check cost beside a plain rate check,
 * and how close to its turn a waiting check is admitted. In-process, on MemoryStore and on a real
 * redis-server.
 *
 * - Cost: `limiter.check()` with 256 checks in flight over 10k identities, four cases side by side
 *   in rounds (order rotated every round): a plain rate check (token bucket), a concurrency check
 *   and its `limiter.release`, a check of a waiting policy under its limit (it does not wait), and
 *   one check of a rate and a concurrency policy for one identity (then its release). Decisions/s,
 *   this process's CPU µs per decision (and Redis's), and each case over the plain rate check,
 *   per round (median and spread).
 * - Lateness: on a `queued`-like policy (burst 5, 10/s, maxWaitMs 1000), 20 checks of each of
 *   many identities sent at once: the first 5 are admitted at once, the next 10 wait for their
 *   turns (100 ms apart), the last 5 are denied at once. The k-th admission of an identity has its
 *   turn (k - 4) * 100 ms after its first check was sent. Admissions are sorted per identity, so
 *   this holds whatever order the store served them in. Lateness = admitted time - turn on the
 *   real clock (`performance.now()`), p50/p99/max over the checks that waited, two ways: from the
 *   send (the turn counted from when the first check was sent: includes the store's answer, which
 *   on Redis waits behind the other checks of the burst), and from the first admission (counted
 *   from when the identity's first check came back admitted: on Redis about when the waiting
 *   checks' answers came back too, so it shows the wait's own precision; on MemoryStore the store
 *   answers at the send and the first admission resolves only after the whole burst was decided,
 *   so there the figure is negative and the send is the reference). Early: judged on
 *   the stores' own clock (`Date.now()`, Redis TIME: whole ms of the system clock), an admission
 *   read before t0 + (k - 4) * 100, t0 the clock just before the first check was sent (the bucket
 *   started at or after it), so every one counted is before its turn; must be 0.
 *
 *   node bench/suites/overload.mjs [--quick] [--stores memory,redis] [--redis-url URL]
 *        [--rounds 5] [--duration-ms 700] [--identities 50] [--out file.json]
 *
 * Without --redis-url it starts its own redis-server on a free loopback port (stopped by PID).
 * Needs the packages built (`npm run build`).
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { startRedis } from '../../test/support/redis-server.js';
import { runClosedLoop } from '../lib/load.mjs';
import { renderOverloadMarkdown } from '../lib/overload-report.mjs';
import { redisCpuSeconds } from '../lib/redis-cpu.mjs';
import { loadSluice } from '../lib/sluice.mjs';
import { median, quantileSorted, spread } from '../lib/stats.mjs';

const { values: opts } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    stores: { type: 'string', default: 'memory,redis' },
    'redis-url': { type: 'string' },
    rounds: { type: 'string' },
    'duration-ms': { type: 'string' },
    identities: { type: 'string' },
    out: { type: 'string' },
  },
});
const fail = (message) => {
  console.error(`overload: ${message}`);
  process.exit(2);
};
const positive = (name, fallback) => {
  const n = Number(opts[name] ?? fallback);
  if (!Number.isInteger(n) || n < 1) fail(`--${name} must be a positive integer, got ${opts[name]}`);
  return n;
};
const stores = opts.stores.split(',');
for (const s of stores) if (s !== 'memory' && s !== 'redis') fail(`--stores: memory or redis, got ${s}`);
const ROUNDS = positive('rounds', opts.quick ? 2 : 5);
const DURATION_MS = positive('duration-ms', opts.quick ? 300 : 700);
const LATE_IDENTITIES = positive('identities', opts.quick ? 10 : 50);
const LATE_ROUNDS = opts.quick ? 1 : 3;
const CONCURRENCY = 256;

const { core, node } = await loadSluice();
const descriptors = Array.from({ length: 10_000 }, (_, i) => ({ identity: `user-${i}` }));

const RATE = { name: 'rate', algorithm: 'token-bucket', limit: 1_000_000, window: '1h' };
/** A limit no identity reaches with 256 checks in flight over 10k identities. */
const SLOTS = { name: 'slots', algorithm: 'concurrency', limit: 1_000, leaseMs: '30s' };
const WAITING = { ...RATE, name: 'waiting', maxWaitMs: 1000 };
const COST_CASES = [
  { name: 'rate', policies: [RATE], release: false },
  { name: 'concurrency + release', policies: [SLOTS], release: true },
  { name: 'waiting policy, under its limit', policies: [WAITING], release: false },
  { name: 'rate + concurrency + release', policies: [RATE, SLOTS], release: true },
];

/** The `queued` policy of the example apps. */
const QUEUED = { name: 'queued', algorithm: 'token-bucket', burst: 5, rate: '10/s', maxWaitMs: 1000 };
const BURST = 5;
const INTERVAL_MS = 100;
const PER_IDENTITY = 20;
const EXPECTED_ADMITTED = BURST + 1000 / INTERVAL_MS;

let prefixes = 0;
/** A limiter on the store (a fresh MemoryStore, or the shared RedisStore) under its own prefix. */
function limiterOn(store, policies) {
  return core.createLimiter({
    policies,
    ...(store === undefined ? {} : { store }),
    prefix: `overload-${process.pid}-${prefixes++}`,
    timeoutMs: 2000,
  });
}

/** One decision of a cost case; a denial is counted (a case must never deny). */
async function costOp(c, i) {
  const decision = await c.limiter.check(descriptors[i % descriptors.length]);
  if (!decision.allowed) c.denied++;
  if (c.release) await c.limiter.release(decision);
}

/** The cost cases side by side on one store, rounds rotated. */
async function measureCosts(storeName, store, admin) {
  const cases = COST_CASES.map((c) => ({
    ...c,
    limiter: limiterOn(store, c.policies),
    denied: 0,
    perSecond: [],
    cpuUs: [],
    redisCpuUs: [],
  }));
  for (const c of cases)
    await runClosedLoop((i) => costOp(c, i), { concurrency: CONCURRENCY, warmupMs: 0, durationMs: 300 });
  for (let round = 0; round < ROUNDS; round++) {
    for (let k = 0; k < cases.length; k++) {
      const c = cases[(k + round) % cases.length];
      const before = admin ? await redisCpuSeconds(admin) : 0;
      const r = await runClosedLoop((i) => costOp(c, i), {
        concurrency: CONCURRENCY,
        warmupMs: 150,
        durationMs: DURATION_MS,
      });
      const after = admin ? await redisCpuSeconds(admin) : 0;
      c.perSecond.push(r.perSecond);
      c.cpuUs.push(r.cpuUsPerOp);
      c.redisCpuUs.push(((after - before) * 1e6) / Math.max(1, r.started));
    }
    process.stderr.write(`overload: ${storeName} cost round ${round + 1}/${ROUNDS}\n`);
  }
  const rate = cases[0];
  const rows = [];
  for (const c of cases) {
    await c.limiter.close();
    const cpuUs = median(c.cpuUs) + median(c.redisCpuUs);
    rows.push({
      store: storeName,
      name: c.name,
      perSecond: median(c.perSecond),
      cpuUs: median(c.cpuUs),
      redisCpuUs: admin ? median(c.redisCpuUs) : undefined,
      vsRate: spread(c.perSecond.map((x, i) => x / rate.perSecond[i])),
      cpuVsRate: cpuUs / (median(rate.cpuUs) + median(rate.redisCpuUs)),
      denied: c.denied,
    });
  }
  return rows;
}

/** One check of the lateness run: pushes its admission times (real clock, store clock), or counts its denial. */
async function timedCheck(limiter, identity, batch) {
  const decision = await limiter.check({ identity });
  if (decision.allowed) batch.admitted.push({ at: performance.now(), clockMs: Date.now() });
  else batch.denied++;
}

/** One lateness round: `LATE_IDENTITIES` identities, `PER_IDENTITY` checks each, all sent at once. */
async function latenessRound(limiter, round) {
  const batches = [];
  const calls = [];
  for (let m = 0; m < LATE_IDENTITIES; m++) {
    const batch = { t0: performance.now(), clock0Ms: Date.now(), admitted: [], denied: 0 };
    batches.push(batch);
    for (let j = 0; j < PER_IDENTITY; j++) calls.push(timedCheck(limiter, `late-${round}-${m}`, batch));
  }
  await Promise.all(calls);
  return batches;
}

/** Lateness of waiting checks on one store. */
async function measureLateness(storeName, store) {
  const limiter = limiterOn(store, [QUEUED]);
  const lateMs = [];
  const lateFromFirstMs = [];
  let early = 0;
  let earliestMs = Number.POSITIVE_INFINITY;
  let admitted = 0;
  let denied = 0;
  for (let round = 0; round < LATE_ROUNDS; round++) {
    for (const batch of await latenessRound(limiter, round)) {
      batch.admitted.sort((a, b) => a.at - b.at);
      admitted += batch.admitted.length;
      denied += batch.denied;
      const first = batch.admitted[0]?.at;
      batch.admitted.forEach((admission, k) => {
        const turnMs = Math.max(0, k - (BURST - 1)) * INTERVAL_MS;
        if (admission.clockMs < batch.clock0Ms + turnMs) {
          early++;
          earliestMs = Math.min(earliestMs, admission.at - batch.t0 - turnMs);
        }
        if (k < BURST) return;
        lateMs.push(admission.at - batch.t0 - turnMs);
        lateFromFirstMs.push(admission.at - first - turnMs);
      });
    }
    process.stderr.write(`overload: ${storeName} lateness round ${round + 1}/${LATE_ROUNDS}\n`);
  }
  await limiter.close();
  lateMs.sort((a, b) => a - b);
  lateFromFirstMs.sort((a, b) => a - b);
  return {
    store: storeName,
    checks: LATE_ROUNDS * LATE_IDENTITIES * PER_IDENTITY,
    admitted,
    expectedAdmitted: LATE_ROUNDS * LATE_IDENTITIES * EXPECTED_ADMITTED,
    denied,
    waited: lateMs.length,
    p50Ms: quantileSorted(lateMs, 0.5),
    p99Ms: quantileSorted(lateMs, 0.99),
    maxMs: lateMs.at(-1),
    fromFirst: {
      p50Ms: quantileSorted(lateFromFirstMs, 0.5),
      p99Ms: quantileSorted(lateFromFirstMs, 0.99),
      maxMs: lateFromFirstMs.at(-1),
    },
    early,
    earliestMs,
  };
}

const ownRedis = stores.includes('redis') && opts['redis-url'] === undefined ? await startRedis() : undefined;
const redisUrl = opts['redis-url'] ?? ownRedis?.url;
const costs = [];
const lateness = [];
try {
  for (const storeName of stores) {
    const redisStore = storeName === 'redis' ? node.createRedisStore(redisUrl) : undefined;
    const admin = storeName === 'redis' ? new Redis(redisUrl) : undefined;
    try {
      costs.push(...(await measureCosts(storeName, redisStore, admin)));
      lateness.push(await measureLateness(storeName, redisStore));
    } finally {
      await admin?.quit();
      await redisStore?.close?.();
    }
  }
} finally {
  await ownRedis?.stop();
}

const output = {
  suite: 'overload',
  rounds: ROUNDS,
  durationMs: DURATION_MS,
  concurrency: CONCURRENCY,
  lateIdentities: LATE_IDENTITIES,
  perIdentity: PER_IDENTITY,
  costs,
  lateness,
};
if (opts.out) writeFileSync(opts.out, JSON.stringify(output, null, 2));
console.log(renderOverloadMarkdown(output).join('\n'));
// Reported, not fatal: the run's other figures are still worth having.
if (lateness.some((l) => l.early > 0))
  console.error('overload: a waiting check was admitted before its turn');
process.exit();
