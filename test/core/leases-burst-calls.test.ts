/**
 * Script calls of a leased policy on a real Redis (counted in Redis's own INFO commandstats),
 * against the same policy unleased on the same checks: a burst of 1,000 checks at once on a fresh
 * key, waves of checks at once, keys seen once, keys drawn uniformly and by Zipf's law (the benchmarks' draw), and a hot
 * key checked one request after another; and the same traffic's store calls on a MemoryStore
 * (which answers each check alone, no batching). A leased policy never makes more store calls
 * than unleased, and on a hot key far fewer.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { keySequence } from '../../bench/lib/key-distributions.mjs';
import { createLimiter } from '../../packages/core/src/limiter/create-limiter.js';
import { DECIDE_SCRIPT } from '../../packages/core/src/redis/script.js';
import { MemoryStore } from '../../packages/core/src/stores/memory-store.js';
import { RedisStore } from '../../packages/core/src/stores/redis-store.js';
import type {
  Decision,
  PolicyInput,
  StoreEntry,
  StoreMode,
  StoreVerdict,
} from '../../packages/core/src/types.js';
import { useRedis } from '../support/redis-fixture.js';
import { scriptCalls } from '../support/script-calls.js';

const redis = useRedis();

beforeEach(async () => {
  await redis.admin.flushall();
  // Loaded up front, so every call of the limiter is one EVALSHA (no NOSCRIPT fallback to count).
  await redis.admin.script('LOAD', DECIDE_SCRIPT.source);
});

/** The example apps' `leased` policy: burst 100, 10/s, 10 units a lease for at most 1 s. */
const LEASED: PolicyInput = {
  name: 'leased',
  algorithm: 'token-bucket',
  burst: 100,
  rate: '10/s',
  lease: { units: 10, ttlMs: 1000 },
};

/** `policy` without its lease. */
const unleased = ({ lease: _lease, ...policy }: PolicyInput): PolicyInput => policy;

/** Longest a check waits in a batch: longer than any turn of the event loop here. */
const BATCH_WAIT_MS = 60_000;

/** A MemoryStore that counts its calls (it answers each check alone: no batching). */
class CountingMemoryStore extends MemoryStore {
  calls = 0;

  override decideSync(entries: readonly StoreEntry[], mode: StoreMode): StoreVerdict[] {
    this.calls += 1;
    return super.decideSync(entries, mode);
  }
}

/** A check of one identity (`tenant` unless the traffic names others). */
type Check = (identity?: string) => Promise<Decision>;
/** Traffic: checks made through `check`, their decisions. */
type Traffic = (check: Check) => Promise<Decision[]>;

/**
 * The time every check of a traffic is made at (ms), on the limiter's and the store's clock alike.
 * The traffic is the same on any machine: how long a busy one takes to run it refills no bucket,
 * expires no lease and ends no cached denial, so leased and unleased runs see the same traffic.
 */
const TRAFFIC_AT_MS = Date.UTC(2026, 0, 1);
const trafficClock = (): number => TRAFFIC_AT_MS;

/** Runs `checks` on a new limiter of `policy` (its own prefix): the decisions and the script calls they made. */
async function measured(
  policy: PolicyInput,
  checks: Traffic,
): Promise<{ decisions: Decision[]; calls: number; admitted: number }> {
  const limiter = createLimiter({
    policies: [policy],
    prefix: `p${Math.random().toString(36).slice(2)}`,
    clock: trafficClock,
    // Checks share a call by event-loop turn alone, not by how long this busy machine takes to make
    // them (a batch open 2 ms is sent at once): the calls counted are the traffic's, on any machine.
    store: new RedisStore({ client: redis.client, maxBatchWaitMs: BATCH_WAIT_MS, clock: trafficClock }),
  });
  const before = await scriptCalls(redis.admin);
  const decisions = await checks((identity = 'tenant') => limiter.check({ identity }));
  const calls = (await scriptCalls(redis.admin)) - before;
  return { decisions, calls, admitted: decisions.filter((d) => d.allowed).length };
}

/** Runs `checks` on a new limiter of `policy` over a counting MemoryStore: its calls and the admissions. */
async function measuredInMemory(
  policy: PolicyInput,
  checks: Traffic,
): Promise<{ calls: number; admitted: number }> {
  const store = new CountingMemoryStore({ clock: trafficClock });
  const limiter = createLimiter({ policies: [policy], store, clock: trafficClock });
  const decisions = await checks((identity = 'tenant') => limiter.check({ identity }));
  return { calls: store.calls, admitted: decisions.filter((d) => d.allowed).length };
}

/** `count` checks at once. */
const atOnce =
  (count: number): Traffic =>
  (check) =>
    Promise.all(Array.from({ length: count }, () => check()));

/** `count` checks, each after the one before is answered. */
const oneByOne =
  (count: number): Traffic =>
  async (check) => {
    const decisions: Decision[] = [];
    for (let i = 0; i < count; i++) decisions.push(await check());
    return decisions;
  };

/** `waves` waves of checks of the identities `identities` names, each wave sent at once once the one before is answered. */
const inWaves =
  (waves: number, perWave: number, identities: (i: number) => string): Traffic =>
  async (check) => {
    const decisions: Decision[] = [];
    for (let w = 0; w < waves; w++)
      decisions.push(
        ...(await Promise.all(Array.from({ length: perWave }, (_, i) => check(identities(w * perWave + i))))),
      );
    return decisions;
  };

/** `count` identities named `prefix` and an index drawn from `keys` by `distribution` (the benchmarks' seeded draw). */
function drawnKeys(distribution: 'uniform' | 'zipf', count: number, keys: number, prefix: string): string[] {
  return Array.from(keySequence(distribution, { identities: keys, length: count }), (k) => `${prefix}${k}`);
}

/** The traffic patterns compared below: each 20 waves of 50 checks at once (1,000 checks). */
const UNIFORM = drawnKeys('uniform', 1000, 100, 'u');
const ZIPF = drawnKeys('zipf', 1000, 100, 'z');
const PATTERNS: readonly (readonly [string, Traffic])[] = [
  ['20 waves of 50 on one fresh key', inWaves(20, 50, () => 'tenant')],
  ['20 waves of 50, each key seen once', inWaves(20, 50, (i) => `once${i}`)],
  ['20 waves of 50 over 100 keys, uniform', inWaves(20, 50, (i) => UNIFORM[i] as string)],
  ['20 waves of 50 over 100 keys, Zipf', inWaves(20, 50, (i) => ZIPF[i] as string)],
  ['1,000 at once on one fresh key', atOnce(1000)],
  ['500 one by one on a hot key', oneByOne(500)],
];

describe('leased script calls on Redis, against the same policy unleased', () => {
  it('1,000 checks at once on a fresh key: no more script calls than unleased, about one per lease', async () => {
    const leased = await measured(LEASED, atOnce(1000));
    const plain = await measured(unleased(LEASED), atOnce(1000));
    console.log(
      `1,000 at once, fresh key: leased ${leased.calls} script calls for ${leased.admitted} admitted, ` +
        `unleased ${plain.calls} for ${plain.admitted}`,
    );
    expect(leased.admitted).toBeGreaterThanOrEqual(100);
    expect(leased.calls).toBeLessThanOrEqual(plain.calls);
    // The first check exact, 10 takes of 10, then about one denied take per unit refilled meanwhile.
    const seconds = 1 + leased.decisions.length / 1000;
    expect(leased.calls).toBeLessThanOrEqual(1 + 100 / 10 + 2 * (1 + 10 * seconds));
  });

  it('a hot key checked 500 times one after another, all admitted: a tenth of the script calls', async () => {
    const hot: PolicyInput = { ...LEASED, burst: 1000 };
    const leased = await measured(hot, oneByOne(500));
    const plain = await measured(unleased(hot), oneByOne(500));
    console.log(
      `500 one by one, hot key: leased ${leased.calls} script calls for ${leased.admitted} admitted, ` +
        `unleased ${plain.calls} for ${plain.admitted}`,
    );
    expect(leased.admitted).toBe(500);
    expect(plain.calls).toBe(500);
    // The first check exact, then one take of 10 per 10 admissions.
    expect(leased.calls).toBeLessThanOrEqual(1 + 500 / 10);
  });
});

/** Where `measure` runs a traffic, by name: a Redis store or a counting MemoryStore. */
const STORES = [
  ['Redis', measured],
  ['a MemoryStore', measuredInMemory],
] as const;

describe('leased store calls never above unleased, traffic by traffic', () => {
  for (const [where, measure] of STORES) {
    it.each(PATTERNS)(`%s, on ${where}: no more store calls than unleased`, async (name, traffic) => {
      const leased = await measure(LEASED, traffic);
      const plain = await measure(unleased(LEASED), traffic);
      console.log(
        `${name}, ${where}: leased ${leased.calls} store calls for ${leased.admitted} admitted, ` +
          `unleased ${plain.calls} for ${plain.admitted}`,
      );
      expect(leased.calls).toBeLessThanOrEqual(plain.calls);
    });
  }
});
