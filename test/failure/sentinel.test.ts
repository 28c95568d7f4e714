/**
 * Redis Sentinel through ioredis: a primary, a replica and three sentinels on loopback, under
 * steady load from one process, with the primary failed over twice: by `SENTINEL FAILOVER`
 * (planned) and by SIGKILL (a crash). Records how long checks were `unavailable` and how far
 * the admitted count went past the limit (writes the old primary acknowledged and never
 * replicated), the figures docs/failure-modes.md reports.
 *
 * Asserted: a store failure is `unavailable` (denied under `closed`), never `over_limit` and
 * never admitted; the limiter decides from the new primary again within seconds; the
 * overshoot is no more than what was admitted in the last second before the failover.
 */
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { createLimiter, type Decision, RedisStore } from '../cluster/core.js';
import { redisCli } from '../support/redis-cluster.js';
import {
  type RedisSentinelSetup,
  SENTINEL_MASTER_NAME,
  startRedisSentinel,
} from '../support/redis-sentinel.js';

const LIMIT = 600;
const WORKERS = 4;
/** About 130 checks a second: the limit is reached seconds after the failover, not before it. */
const PACE_MS = 30;
/** Admitted before the failover is triggered. */
const ADMITTED_BEFORE_FAILOVER = 300;
/** Store decisions kept up after recovery before the load stops. */
const AFTER_RECOVERY_MS = 2000;

interface Sample {
  readonly atMs: number;
  readonly outcome: Decision['outcome'];
  readonly allowed: boolean;
  readonly source: Decision['source'];
}

let setup: RedisSentinelSetup | undefined;
let client: Redis | undefined;

afterEach(async () => {
  client?.disconnect();
  client = undefined;
  await setup?.stop();
  setup = undefined;
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function failOverUnderLoad(how: 'sentinel-failover' | 'kill') {
  setup = await startRedisSentinel();
  await setup.waitReplicated();
  await setup.waitSentinelsReady();
  const oldPrimary = await setup.primaryPort();
  expect(oldPrimary).toBe(setup.primary.port);

  client = new Redis({
    sentinels: setup.sentinels.map((s) => ({ ...s })),
    name: SENTINEL_MASTER_NAME,
    maxRetriesPerRequest: 1,
    // A demoted primary answers writes with READONLY: reconnect, and ask the sentinels again.
    reconnectOnError: (error) => error.message.startsWith('READONLY'),
  });
  client.on('error', () => {});
  const limiter = createLimiter({
    policies: [
      { name: 'sentinel', algorithm: 'fixed-window', limit: LIMIT, window: '10m', failMode: 'closed' },
    ],
    store: new RedisStore({ client }),
    prefix: `sentinel-${how}`,
    // Every check goes to Redis: remembered denials would hide the failover.
    denyCache: false,
  });

  const samples: Sample[] = [];
  const started = performance.now();
  let failoverAtMs: number | undefined;
  let switchedAtMs: number | undefined;
  let recoveredAtMs: number | undefined;
  let stop = false;
  let admitted = 0;

  const worker = async () => {
    while (!stop) {
      const decision = await limiter.check({ identity: 'tenant' });
      const atMs = performance.now() - started;
      samples.push({ atMs, outcome: decision.outcome, allowed: decision.allowed, source: decision.source });
      if (decision.allowed) admitted++;
      // Recovered: the first store decision once the sentinels name the new primary.
      if (switchedAtMs !== undefined && recoveredAtMs === undefined && decision.source === 'store') {
        recoveredAtMs = atMs;
      }
      if (
        recoveredAtMs !== undefined &&
        atMs - recoveredAtMs > AFTER_RECOVERY_MS &&
        decision.outcome === 'over_limit'
      ) {
        stop = true;
      }
      if (failoverAtMs !== undefined && atMs - failoverAtMs > 30_000) stop = true;
      await sleep(PACE_MS);
    }
  };
  const trigger = async () => {
    while (admitted < ADMITTED_BEFORE_FAILOVER) await sleep(1);
    failoverAtMs = performance.now() - started;
    if (how === 'kill') process.kill(setup!.primary.pid, 'SIGKILL');
    else
      await redisCli([
        '-h',
        '127.0.0.1',
        '-p',
        String(setup!.sentinels[0]!.port),
        'SENTINEL',
        'FAILOVER',
        SENTINEL_MASTER_NAME,
      ]);
    while ((await setup!.primaryPort().catch(() => oldPrimary)) === oldPrimary && !stop) await sleep(20);
    switchedAtMs = performance.now() - started;
  };
  await Promise.all([...Array.from({ length: WORKERS }, worker), trigger()]);

  const unavailable = samples.filter((s) => s.outcome === 'unavailable');
  const firstUnavailable = unavailable[0]?.atMs;
  const lastUnavailable = unavailable.at(-1)?.atMs;
  const admittedLastSecondBefore = samples.filter(
    (s) => s.allowed && s.atMs <= failoverAtMs! && s.atMs > failoverAtMs! - 1000,
  ).length;
  const figures = {
    how,
    checks: samples.length,
    admitted,
    overshoot: admitted - LIMIT,
    admittedLastSecondBefore,
    unavailableChecks: unavailable.length,
    unavailableWindowMs:
      firstUnavailable === undefined
        ? 0
        : Math.round((lastUnavailable ?? firstUnavailable) - firstUnavailable),
    failoverToSwitchedMs: switchedAtMs === undefined ? undefined : Math.round(switchedAtMs - failoverAtMs!),
    failoverToRecoveredMs:
      recoveredAtMs === undefined ? undefined : Math.round(recoveredAtMs - failoverAtMs!),
    newPrimary: (await setup.primaryPort()) === setup.replica.port,
  };
  console.log(`[sentinel] ${JSON.stringify(figures)}`);

  // The sentinels promoted the replica, and the limiter decides from it again.
  expect(figures.newPrimary).toBe(true);
  expect(recoveredAtMs).toBeDefined();
  expect(figures.failoverToRecoveredMs!).toBeLessThan(20_000);
  // A failure is unavailable, denied under closed; never over_limit, never admitted.
  for (const s of samples) {
    if (s.outcome === 'unavailable') expect([s.allowed, s.source]).toEqual([false, 'fail-closed']);
    if (s.outcome === 'over_limit') expect(s.source).toBe('store');
  }
  // The limit was reached after the failover. Past it only by writes the old primary never
  // replicated; short of it only by checks charged whose reply was lost (they are unavailable).
  expect(samples.at(-1)?.outcome).toBe('over_limit');
  expect(figures.overshoot).toBeLessThanOrEqual(admittedLastSecondBefore);
  expect(figures.overshoot).toBeGreaterThanOrEqual(-unavailable.length);
  return figures;
}

describe('Redis Sentinel through ioredis, failover under load', () => {
  it('SENTINEL FAILOVER (planned)', async () => {
    await failOverUnderLoad('sentinel-failover');
  }, 120_000);

  it('SIGKILL of the primary (a crash)', async () => {
    await failOverUnderLoad('kill');
  }, 120_000);
});
