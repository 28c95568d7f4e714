/**
 * Leases across 4 OS processes sharing one Redis (one connection and limiter each, the instances
 * of a fleet): never more admitted than the policy allows, at most instances x units left unused,
 * Redis script calls per admitted request about 1/units, and a leased policy beside an unleased
 * one charged only for what the fleet took as leases.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLimiter } from '../../packages/core/src/limiter/create-limiter.js';
import { RedisStore } from '../../packages/core/src/stores/redis-store.js';
import type { PolicyInput } from '../../packages/core/src/types.js';
import { type RedisProcess, startRedis } from '../support/redis-server.js';
import { buildWorkerScript, startWorker, stopWorkers, type Worker } from './contention-fleet.js';

const PROCESSES = 4;
const UNITS = 10;
/** The longest window a policy accepts: nothing refills during a round. */
const NO_REFILL = '366d';

interface Result {
  admitted: number;
  overLimit: number;
  unavailable: number;
  fromLease: number;
  ms: number;
}

let redis: RedisProcess;
let admin: Redis;
const workers: Worker[] = [];
const figures: string[] = [];

beforeAll(async () => {
  redis = await startRedis();
  admin = new Redis(redis.port, '127.0.0.1');
  const script = await buildWorkerScript();
  for (let i = 0; i < PROCESSES; i++) workers.push(startWorker(script, i, redis.url, 1));
  await Promise.all(workers.map((w) => w.next('ready')));
});

afterAll(async () => {
  await stopWorkers(workers);
  admin?.disconnect();
  await redis?.stop();
  if (figures.length > 0) console.log(`leases across ${PROCESSES} processes:\n${figures.join('\n')}`);
});

/** Decide-script calls Redis ran so far (EVALSHA and EVAL). */
async function scriptCalls(): Promise<number> {
  const info = await admin.info('commandstats');
  let calls = 0;
  for (const m of info.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)) calls += Number(m[1]);
  return calls;
}

/** One round on every worker at once: the combined counts, the script calls it made, its wall time. */
async function round(
  label: string,
  policies: PolicyInput[],
  prefix: string,
  checksPerProcess: number,
  options: { waveCosts?: number[][]; waveGapMs?: number } = {},
) {
  for (const w of workers) {
    w.child.send({
      type: 'round',
      policies,
      identity: 'hot-tenant',
      checksPerConnection: checksPerProcess,
      prefix,
      ...options,
    });
  }
  await Promise.all(workers.map((w) => w.next('armed')));
  const callsBefore = await scriptCalls();
  const started = performance.now();
  for (const w of workers) w.child.send({ type: 'go' });
  const results = (await Promise.all(workers.map((w) => w.next('result')))) as unknown as Result[];
  const wallMs = performance.now() - started;
  const calls = (await scriptCalls()) - callsBefore;
  const total = { admitted: 0, overLimit: 0, unavailable: 0, fromLease: 0 };
  for (const r of results) {
    total.admitted += r.admitted;
    total.overLimit += r.overLimit;
    total.unavailable += r.unavailable;
    total.fromLease += r.fromLease;
  }
  figures.push(
    `  ${label}: admitted ${total.admitted} (${results.map((r) => r.admitted).join('+')}), from leases ${total.fromLease}, ` +
      `over_limit ${total.overLimit}, script calls ${calls}, ${Math.round(wallMs)} ms`,
  );
  return { total, calls, wallMs };
}

/** The units a fresh limiter reads as left for the hot tenant, per policy. */
async function remaining(policies: PolicyInput[], prefix: string): Promise<Record<string, number>> {
  const observer = new Redis(redis.port, '127.0.0.1');
  try {
    const limiter = createLimiter({ policies, prefix, store: new RedisStore({ client: observer }) });
    const peeked = await limiter.peek({ identity: 'hot-tenant' });
    return Object.fromEntries(peeked.results.map((r) => [r.policy, r.remaining]));
  } finally {
    observer.disconnect();
  }
}

describe(`leases across ${PROCESSES} processes`, () => {
  it('runs 4 processes, one connection each', async () => {
    const list = String(await admin.client('LIST'));
    const pids = new Set([...list.matchAll(/name=sluice-contention-w\d+-p(\d+)-c0/g)].map((m) => m[1]));
    expect(pids.size).toBe(PROCESSES);
  });

  it.each(['token-bucket', 'gcra', 'fixed-window', 'sliding-window', 'sliding-log'] as const)(
    '%s: of 2,000 checks at once, at most 100 admitted and at least 100 - 4 x 10, script calls about 1/10 per admitted',
    async (algorithm) => {
      const policy: PolicyInput =
        algorithm === 'token-bucket' || algorithm === 'gcra'
          ? {
              name: 'leased',
              algorithm,
              burst: 100,
              rate: `100/${NO_REFILL}`,
              lease: { units: UNITS, ttlMs: '1m' },
            }
          : {
              name: 'leased',
              algorithm,
              limit: 100,
              window: NO_REFILL,
              lease: { units: UNITS, ttlMs: '1m' },
            };
      const { total, calls } = await round(algorithm, [policy], `lp-${algorithm}`, 500);
      expect(total.unavailable).toBe(0);
      expect(total.admitted).toBeLessThanOrEqual(100);
      expect(total.admitted).toBeGreaterThanOrEqual(100 - PROCESSES * UNITS);
      expect(total.admitted + total.overLimit).toBe(2000);
      // Each take pays up to 10 admissions; a denied take is remembered, so denials add one call
      // per process (the deny cache is off in the workers).
      expect(calls).toBeLessThanOrEqual(Math.ceil((1.2 * total.admitted) / UNITS) + 2 * PROCESSES);
      const left = await remaining([policy], `lp-${algorithm}`);
      // Taken up front: the store's count is what the fleet took, admitted plus what leases hold.
      expect(100 - (left.leased as number)).toBeGreaterThanOrEqual(total.admitted);
      expect(100 - (left.leased as number)).toBeLessThanOrEqual(total.admitted + PROCESSES * UNITS);
    },
  );

  it('with a large budget: 4,000 admitted in 400 script calls or fewer (1.2/units per admitted at most)', async () => {
    const policy: PolicyInput = {
      name: 'leased',
      burst: 100_000,
      rate: `100000/${NO_REFILL}`,
      lease: { units: UNITS, ttlMs: '1m' },
    };
    const { total, calls } = await round('large budget', [policy], 'lp-large', 1000);
    expect(total.admitted).toBe(4000);
    expect(calls).toBeLessThanOrEqual((1.2 * 4000) / UNITS);
    // Every admission came from a lease but the request of each take (one take pays UNITS admissions)
    // and each process's first check of the key (a cold key's, made exactly).
    expect(total.fromLease).toBeGreaterThanOrEqual(4000 - 4000 / UNITS - PROCESSES);
  });

  it('with refill over time: from a fresh key never above burst + 10/s x T, and the lease TTL never exceeded', async () => {
    const policy: PolicyInput = {
      name: 'leased',
      burst: 100,
      rate: '10/s',
      lease: { units: UNITS, ttlMs: '1s' },
    };
    // 20 waves 100 ms apart, 15 checks per process each: far more demand than the rate.
    const { total, wallMs } = await round('refill 10/s', [policy], 'lp-refill', 300, {
      waveCosts: Array.from({ length: 20 }, () => [1]),
      waveGapMs: 100,
    });
    expect(total.admitted).toBeLessThanOrEqual(100 + (10 * wallMs) / 1000 + 1);
    expect(total.admitted).toBeGreaterThanOrEqual(100 - PROCESSES * UNITS);
  });

  it('beside an unleased policy: all or nothing, and the leased policy charged at most what was admitted + 4 x 10', async () => {
    const leased: PolicyInput = {
      name: 'leased',
      burst: 1000,
      rate: `1000/${NO_REFILL}`,
      lease: { units: UNITS, ttlMs: '1m' },
    };
    const strict: PolicyInput = { name: 'strict', algorithm: 'fixed-window', limit: 50, window: NO_REFILL };
    const { total, calls } = await round('leased + strict', [leased, strict], 'lp-mixed', 500);
    expect(total.admitted).toBe(50);
    // A check beside another policy rides the batch (its leased entry exact) rather than queue
    // behind the take in flight: 2,000 checks in at most 50 script calls (about 280 when they queued).
    expect(calls).toBeLessThanOrEqual(50);
    const left = await remaining([leased, strict], 'lp-mixed');
    expect(left.strict).toBe(0);
    expect(1000 - (left.leased as number)).toBeGreaterThanOrEqual(50);
    expect(1000 - (left.leased as number)).toBeLessThanOrEqual(50 + PROCESSES * UNITS);
  });
});
