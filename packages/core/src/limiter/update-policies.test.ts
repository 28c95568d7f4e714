/**
 * `limiter.updatePolicies`: validation (a bad set changes nothing), the next check under the new
 * limits, rates and fail modes, the deny cache and local fallback rebuilt, and what in-flight
 * usage becomes when a limit goes up or down, algorithm by algorithm, on MemoryStore and on a
 * real redis-server, with an injected clock (docs/policy-changes.md states the same table).
 */
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisProcess, startRedis } from '../../../../test/support/redis-server.js';
import { PolicyError } from '../policy/errors.js';
import { MemoryStore } from '../stores/memory-store.js';
import { RedisStore } from '../stores/redis-store.js';
import type { Algorithm, PolicyInput, Store } from '../types.js';
import { createLimiter } from './create-limiter.js';
import { SwitchableStore } from './test-stores.test-support.js';

let server: RedisProcess;
let redis: Redis;
let run = 0;

beforeAll(async () => {
  server = await startRedis();
  redis = new Redis(server.port, '127.0.0.1', { maxRetriesPerRequest: 1 });
});

afterAll(async () => {
  redis?.disconnect();
  await server?.stop();
});

/** A start on a 60 s boundary, so every window of these tests starts with it. */
const T0 = 1_800_000_000_000;

type StoreKind = 'memory' | 'redis';
const STORES: StoreKind[] = ['memory', 'redis'];

function setup(kind: StoreKind, policies: readonly PolicyInput[]) {
  const clock = { now: T0 };
  const read = () => clock.now;
  const store: Store =
    kind === 'memory' ? new MemoryStore({ clock: read }) : new RedisStore({ client: redis, clock: read });
  const limiter = createLimiter({ policies, store, clock: read, prefix: `up${++run}` });
  return { clock, limiter };
}

const policyOf = (algorithm: Algorithm, limit: number): PolicyInput =>
  algorithm === 'token-bucket' || algorithm === 'gcra'
    ? { name: 'api', algorithm, burst: limit, rate: { limit, window: '60s' } }
    : { name: 'api', algorithm, limit, window: '60s' };

describe.each(STORES)('updatePolicies on %s', (kind) => {
  it('a bad policy throws PolicyError and the limiter keeps its policies', async () => {
    const { limiter } = setup(kind, [policyOf('fixed-window', 2)]);
    const before = limiter.policies;
    expect(() => limiter.updatePolicies([{ name: 'api', limit: -1, window: '60s' }])).toThrow(PolicyError);
    expect(() => limiter.updatePolicies([])).toThrow(PolicyError);
    expect(limiter.policies).toBe(before);
    await limiter.check({ identity: 'a' });
    await limiter.check({ identity: 'a' });
    expect((await limiter.check({ identity: 'a' })).allowed).toBe(false);
  });

  it('a raised limit applies on the next check, even where the deny cache remembered a denial', async () => {
    const { limiter } = setup(kind, [policyOf('fixed-window', 2)]);
    for (let i = 0; i < 2; i++) expect((await limiter.check({ identity: 'a' })).allowed).toBe(true);
    const denied = await limiter.check({ identity: 'a' });
    expect(denied).toMatchObject({ allowed: false, source: 'store' });
    // Remembered: the next one is answered in-process.
    expect(await limiter.check({ identity: 'a' })).toMatchObject({ allowed: false, source: 'deny-cache' });
    limiter.updatePolicies([policyOf('fixed-window', 5)]);
    expect(limiter.policy('api').limit).toBe(5);
    const after = await limiter.check({ identity: 'a' });
    expect(after).toMatchObject({ allowed: true, source: 'store', limit: 5, remaining: 2 });
  });

  it('a lowered limit denies at once what the old one still admitted', async () => {
    const { limiter } = setup(kind, [policyOf('fixed-window', 10)]);
    for (let i = 0; i < 4; i++) await limiter.check({ identity: 'a' });
    limiter.updatePolicies([policyOf('fixed-window', 3)]);
    expect(await limiter.check({ identity: 'a' })).toMatchObject({
      allowed: false,
      outcome: 'over_limit',
      limit: 3,
    });
  });

  it('new policies can be added and chosen by name', async () => {
    const { limiter } = setup(kind, [policyOf('fixed-window', 2)]);
    limiter.updatePolicies([policyOf('fixed-window', 2), { name: 'extra', limit: 1, window: '60s' }]);
    expect(limiter.policies.map((p) => p.name)).toEqual(['api', 'extra']);
    expect(await limiter.check({ identity: 'a', policies: ['extra'] })).toMatchObject({
      allowed: true,
      remaining: 0,
    });
  });
});

describe('fail modes changed by updatePolicies', () => {
  it('closed, then open, then local (the local fallback appears), then closed again', async () => {
    const clock = { now: T0 };
    const store = new SwitchableStore(() => clock.now);
    const limiter = createLimiter({
      policies: [{ name: 'api', limit: 2, window: '60s', failMode: 'closed' }],
      store,
      clock: () => clock.now,
    });
    store.behaviour = 'error';
    expect(await limiter.check({ identity: 'a' })).toMatchObject({ allowed: false, source: 'fail-closed' });
    limiter.updatePolicies([{ name: 'api', limit: 2, window: '60s', failMode: 'open' }]);
    expect(await limiter.check({ identity: 'a' })).toMatchObject({ allowed: true, source: 'fail-open' });
    limiter.updatePolicies([{ name: 'api', limit: 2, window: '60s', failMode: 'local' }]);
    const local = [];
    for (let i = 0; i < 3; i++) local.push(await limiter.check({ identity: 'a' }));
    expect(local.map((d) => [d.allowed, d.source])).toEqual([
      [true, 'local'],
      [true, 'local'],
      [false, 'local'],
    ]);
    limiter.updatePolicies([{ name: 'api', limit: 2, window: '60s', failMode: 'closed' }]);
    expect(await limiter.check({ identity: 'a' })).toMatchObject({ allowed: false, source: 'fail-closed' });
  });
});

/**
 * In-flight usage across a change, per algorithm: 6 of 10 units used at one instant, then the
 * limit goes to 20 or to 4 and one more unit is asked for at the same instant. `remaining` is
 * what the check reports (after its own unit when admitted).
 */
const IN_FLIGHT: { algorithm: Algorithm; raised: number; lowered: boolean }[] = [
  // The bucket keeps its tokens (4), not its usage: the raised capacity refills at the new rate.
  { algorithm: 'token-bucket', raised: 3, lowered: true },
  // GCRA keeps what is owed (6): the raised burst has 14 more at once; the lowered one is full.
  { algorithm: 'gcra', raised: 13, lowered: false },
  // The window algorithms keep their counts (6): 14 more in this window, or none until it ends.
  { algorithm: 'fixed-window', raised: 13, lowered: false },
  { algorithm: 'sliding-window', raised: 13, lowered: false },
  { algorithm: 'sliding-log', raised: 13, lowered: false },
];

describe.each(STORES)('in-flight usage across a change on %s', (kind) => {
  it.each(IN_FLIGHT)('$algorithm: 6 of 10 used, then 20 or 4', async ({ algorithm, raised, lowered }) => {
    for (const [limit, expected] of [
      [20, { allowed: true, remaining: raised }],
      [4, lowered ? { allowed: true, remaining: 3 } : { allowed: false, remaining: 0 }],
    ] as const) {
      const { limiter } = setup(kind, [policyOf(algorithm, 10)]);
      for (let i = 0; i < 6; i++) await limiter.check({ identity: 'a' });
      limiter.updatePolicies([policyOf(algorithm, limit)]);
      const after = await limiter.check({ identity: 'a' });
      expect({ allowed: after.allowed, remaining: after.remaining }, `${algorithm} to ${limit}`).toEqual(
        expected,
      );
    }
  });
});

const ALGORITHMS: Algorithm[] = ['token-bucket', 'gcra', 'fixed-window', 'sliding-window', 'sliding-log'];
type Step = { kind: 'update'; limit: number } | { kind: 'check' } | { kind: 'wait'; ms: number };
const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 1,
    arbitrary: fc.integer({ min: 1, max: 12 }).map((limit) => ({ kind: 'update' as const, limit })),
  },
  { weight: 5, arbitrary: fc.constant({ kind: 'check' as const }) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 90_000 }).map((ms) => ({ kind: 'wait' as const, ms })) },
);

/**
 * After any sequence of updates, checks and waits, no check admits above the current policy's
 * capacity: between two moves of the clock, the units admitted since the last update never
 * exceed its limit, and `remaining` never exceeds it either.
 */
async function neverAboveCapacity(kind: StoreKind, algorithm: Algorithm, steps: readonly Step[]) {
  const { clock, limiter } = setup(kind, [policyOf(algorithm, 6)]);
  let limit = 6;
  let admittedSince = 0;
  for (const step of steps) {
    if (step.kind === 'update') {
      limiter.updatePolicies([policyOf(algorithm, step.limit)]);
      limit = step.limit;
      admittedSince = 0;
    } else if (step.kind === 'wait') {
      clock.now += step.ms;
      admittedSince = 0;
    } else {
      const d = await limiter.check({ identity: 'a' });
      expect(d.remaining).toBeLessThanOrEqual(limit);
      if (d.allowed) admittedSince++;
      expect(admittedSince).toBeLessThanOrEqual(limit);
    }
  }
}

describe('fast-check: no check admits above the current capacity after any sequence of updates', () => {
  it.each(ALGORITHMS)('%s on MemoryStore', async (algorithm) => {
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { minLength: 1, maxLength: 40 }), (steps) =>
        neverAboveCapacity('memory', algorithm, steps),
      ),
      { numRuns: 60 },
    );
  });

  it.each(ALGORITHMS)('%s on Redis', async (algorithm) => {
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { minLength: 1, maxLength: 30 }), (steps) =>
        neverAboveCapacity('redis', algorithm, steps),
      ),
      { numRuns: 15 },
    );
  });
});
