/**
 * Contention: 2 OS processes x 4 Redis connections (8 connections) fire 2,000 concurrent
 * one-unit checks at one key of capacity 100 with no refill. Exactly 100 are admitted, for
 * every algorithm and for a multi-policy check (whose other policies are charged exactly 100).
 * With each limiter's deny cache on and costs that leave units only cheaper checks can take,
 * exactly the capacity is admitted in units. With request ids sent by every process and
 * connection, each id is charged once and all its copies get one answer.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLimiter } from '../../packages/core/src/limiter/create-limiter.js';
import { RedisStore } from '../../packages/core/src/stores/redis-store.js';
import type { Algorithm, PolicyInput } from '../../packages/core/src/types.js';
import { type RedisProcess, startRedis } from '../support/redis-server.js';
import { buildWorkerScript, startWorker, stopWorkers, type Worker } from './contention-fleet.js';

const PROCESSES = 2;
const CONNECTIONS_PER_PROCESS = 4;
const CHECKS = 2000;
const CHECKS_PER_CONNECTION = CHECKS / (PROCESSES * CONNECTIONS_PER_PROCESS);
/** The longest window a policy accepts: nothing refills during the test. */
const NO_REFILL = '366d';

interface Result {
  type: 'result';
  pid: number;
  checks: number;
  admitted: number;
  overLimit: number;
  unavailable: number;
  unitsAdmitted: number;
  fromDenyCache: number;
  byRequest: Record<string, [number, number]>;
  settled: number;
  ms: number;
}

/** How a round differs from the default (all at once, cost 1, no deny cache, no request ids). */
interface RoundOptions {
  readonly denyCache?: boolean;
  readonly waveCosts?: number[][];
  readonly requestIds?: number;
  readonly settleTo?: number;
}

let redis: RedisProcess;
let admin: Redis;
const workers: Worker[] = [];
/** Measured per round, printed at the end. */
const figures: string[] = [];

beforeAll(async () => {
  redis = await startRedis();
  admin = new Redis(redis.port, '127.0.0.1');
  const script = await buildWorkerScript();
  for (let i = 0; i < PROCESSES; i++)
    workers.push(startWorker(script, i, redis.url, CONNECTIONS_PER_PROCESS));
  await Promise.all(workers.map((w) => w.next('ready')));
});

afterAll(async () => {
  await stopWorkers(workers);
  admin?.disconnect();
  await redis?.stop();
  if (figures.length > 0)
    console.log(`contention (${CHECKS} checks, 8 connections, 2 processes):\n${figures.join('\n')}`);
});

/** Runs one round on every worker at once; returns the combined counts. */
async function round(label: string, policies: PolicyInput[], prefix: string, options: RoundOptions = {}) {
  for (const w of workers) {
    w.child.send({
      type: 'round',
      policies,
      identity: 'hot-tenant',
      checksPerConnection: CHECKS_PER_CONNECTION,
      prefix,
      ...options,
    });
  }
  await Promise.all(workers.map((w) => w.next('armed')));
  const started = performance.now();
  for (const w of workers) w.child.send({ type: 'go' });
  const results = (await Promise.all(workers.map((w) => w.next('result')))) as unknown as Result[];
  const wallMs = performance.now() - started;
  const total = {
    checks: 0,
    admitted: 0,
    overLimit: 0,
    unavailable: 0,
    unitsAdmitted: 0,
    fromDenyCache: 0,
    settled: 0,
  };
  const byRequest = new Map<string, [number, number]>();
  for (const r of results) {
    total.checks += r.checks;
    total.admitted += r.admitted;
    total.overLimit += r.overLimit;
    total.unavailable += r.unavailable;
    total.unitsAdmitted += r.unitsAdmitted;
    total.fromDenyCache += r.fromDenyCache;
    total.settled += r.settled;
    for (const [id, [admitted, denied]] of Object.entries(r.byRequest)) {
      const tally = byRequest.get(id) ?? [0, 0];
      byRequest.set(id, [tally[0] + admitted, tally[1] + denied]);
    }
  }
  figures.push(
    `  ${label}: admitted ${total.admitted}, over_limit ${total.overLimit}, unavailable ${total.unavailable}, ` +
      `per process ${results.map((r) => r.admitted).join('+')}, ${Math.round(wallMs)} ms`,
  );
  return { total, results, byRequest };
}

/** What a fresh limiter reads of the hot tenant's state now, per policy: the units left. */
async function remaining(policies: PolicyInput[], prefix: string): Promise<[string, number][]> {
  const observer = new Redis(redis.port, '127.0.0.1');
  try {
    const limiter = createLimiter({ policies, prefix, store: new RedisStore({ client: observer }) });
    const peeked = await limiter.peek({ identity: 'hot-tenant' });
    return peeked.results.map((r) => [r.policy, r.remaining]);
  } finally {
    observer.disconnect();
  }
}

const algorithms: Algorithm[] = ['token-bucket', 'gcra', 'sliding-window', 'fixed-window', 'sliding-log'];

describe('contention across processes and connections', () => {
  it('runs on at least 8 connections from at least 2 processes', async () => {
    const list = String(await admin.client('LIST'));
    const names = [...list.matchAll(/name=sluice-contention-w(\d+)-p(\d+)-c(\d+)/g)];
    expect(names.length).toBe(PROCESSES * CONNECTIONS_PER_PROCESS);
    expect(new Set(names.map((m) => m[2])).size).toBe(PROCESSES);
    expect(new Set(workers.map((w) => w.child.pid)).size).toBe(PROCESSES);
  });

  it.each(algorithms)('%s: exactly 100 of 2,000 admitted', async (algorithm) => {
    const policy: PolicyInput = { name: 'hot', algorithm, limit: 100, window: NO_REFILL };
    const { total, results } = await round(algorithm, [policy], `c-${algorithm}`);
    expect(total.checks).toBe(CHECKS);
    expect(total.unavailable).toBe(0);
    expect(total.admitted).toBe(100);
    expect(total.overLimit).toBe(CHECKS - 100);
    expect(results.every((r) => r.checks === CHECKS / PROCESSES)).toBe(true);
  });

  it('multi-policy: exactly 100 admitted, and the other policies charged exactly 100 times', async () => {
    const policies: PolicyInput[] = [
      { name: 'tight', algorithm: 'token-bucket', limit: 100, window: NO_REFILL },
      { name: 'log', algorithm: 'sliding-log', limit: 150, window: NO_REFILL },
      { name: 'fixed', algorithm: 'fixed-window', limit: 120, window: NO_REFILL },
      { name: 'gcra', algorithm: 'gcra', limit: 130, window: NO_REFILL },
      { name: 'sliding', algorithm: 'sliding-window', limit: 140, window: NO_REFILL },
    ];
    const { total } = await round('multi-policy (5 policies, tightest 100)', policies, 'c-multi');
    expect(total.unavailable).toBe(0);
    expect(total.admitted).toBe(100);
    const observer = new Redis(redis.port, '127.0.0.1');
    try {
      const limiter = createLimiter({
        policies,
        prefix: 'c-multi',
        store: new RedisStore({ client: observer }),
      });
      const peeked = await limiter.peek({ identity: 'hot-tenant' });
      expect(peeked.results.map((r) => [r.policy, r.remaining])).toEqual([
        ['tight', 0],
        ['log', 50],
        ['fixed', 20],
        ['gcra', 30],
        ['sliding', 40],
      ]);
    } finally {
      observer.disconnect();
    }
  });
});

describe('contention across processes with the deny cache and with request ids', () => {
  /**
   * Waves per connection, one after another: cost 7 leaves 2 of the 100 units (14 x 7 = 98) and
   * fills every cache with cost-7 denials; the cost-1 waves must still reach Redis for those 2,
   * and the second cost-7 wave is answered from the caches.
   */
  const WAVE_COSTS = [[7], [1], [7], [1]];

  it.each(algorithms)(
    '%s, deny cache on: exactly the capacity admitted in units, none refused that Redis would admit',
    async (algorithm) => {
      const policies: PolicyInput[] = [{ name: 'hot', algorithm, limit: 100, window: NO_REFILL }];
      const prefix = `dc-${algorithm}`;
      const { total } = await round(`${algorithm}, deny cache, costs 7 then 1`, policies, prefix, {
        denyCache: true,
        waveCosts: WAVE_COSTS,
      });
      expect(total.checks).toBe(CHECKS);
      expect(total.unavailable).toBe(0);
      // The caches answered some checks in-process ...
      expect(total.fromDenyCache).toBeGreaterThan(0);
      // ... and never admitted beyond Redis, nor kept Redis from spending its last units.
      expect(total.unitsAdmitted).toBe(100);
      expect(await remaining(policies, prefix)).toEqual([['hot', 0]]);
    },
  );

  it('idempotent replay: every process and connection sends the same request ids; each is charged once', async () => {
    const policies: PolicyInput[] = [
      { name: 'hot', algorithm: 'sliding-log', limit: 100, window: NO_REFILL },
    ];
    // Each connection sends every id twice: 16 copies of each id, from 2 processes and 8 connections.
    const REQUEST_IDS = CHECKS_PER_CONNECTION / 2;
    const copies = CHECKS / REQUEST_IDS;
    const { total, byRequest } = await round(`request ids, ${copies} copies each`, policies, 'idem-x', {
      requestIds: REQUEST_IDS,
    });
    expect(total.unavailable).toBe(0);
    expect(byRequest.size).toBe(REQUEST_IDS);
    const tallies = [...byRequest.values()];
    for (const [admitted, denied] of tallies) {
      expect(admitted + denied).toBe(copies);
      // Every copy of one id got the same answer, whichever process and connection sent it.
      expect(Math.min(admitted, denied)).toBe(0);
    }
    expect(tallies.filter(([admitted]) => admitted > 0)).toHaveLength(100);
    expect(total.admitted).toBe(100 * copies);
    expect(await remaining(policies, 'idem-x')).toEqual([['hot', 0]]);
  });
});

describe('contention across processes with settles in flight', () => {
  it.each(algorithms)(
    '%s: each check reserves 2 and settles to 1 while the others run: never more than the capacity used',
    async (algorithm) => {
      const policies: PolicyInput[] = [{ name: 'hot', algorithm, limit: 100, window: NO_REFILL }];
      const prefix = `st-${algorithm}`;
      const { total } = await round(`${algorithm}, reserve 2, settle to 1`, policies, prefix, {
        // Four waves one after another: the settles of a wave go out before the next wave's checks.
        waveCosts: [[2], [2], [2], [2]],
        settleTo: 1,
      });
      expect(total.checks).toBe(CHECKS);
      expect(total.unavailable).toBe(0);
      // Every admitted check settled, and each ended up using 1 of the 100 units.
      expect(total.settled).toBe(total.admitted);
      expect(total.admitted).toBeLessThanOrEqual(100);
      // Reservations alone admit 50; the refunds in flight let more in.
      expect(total.admitted).toBeGreaterThan(50);
      expect(await remaining(policies, prefix)).toEqual([['hot', 100 - total.admitted]]);
    },
  );
});
