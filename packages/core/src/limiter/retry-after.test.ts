/**
 * A client that waits exactly the `retryAfterMs` it was told is admitted, whatever source denied
 * it: the store, the deny cache, a remembered lease denial, the local stage, a ban. One client,
 * one injected clock; a random schedule of requests, some sent at once (hammering), some after
 * exactly the wait the last denial reported. MemoryStore and a real Redis (the script given the
 * same clock).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { useRedis } from '../../../../test/support/redis-fixture.js';
import { MemoryStore } from '../stores/memory-store.js';
import { RedisStore } from '../stores/redis-store.js';
import type { Algorithm, Clock, DecisionSource, PolicyInput, Store } from '../types.js';
import { createLimiter } from './create-limiter.js';

const redis = useRedis();
const T0 = 1_764_400_200_000;
let runs = 0;

type StoreKind = 'memory' | 'redis';
const storeOf = (kind: StoreKind, clock: Clock): Store =>
  kind === 'memory' ? new MemoryStore({ clock }) : new RedisStore({ client: redis.client, clock });

/** One request of the schedule: sent `gapMs` after the last, or, after a denial, `honour`ing its wait. */
interface Step {
  readonly gapMs: number;
  readonly honour: boolean;
}
const arbSteps = fc.array(
  fc.record({ gapMs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 3000 })), honour: fc.boolean() }),
  { minLength: 1, maxLength: 40 },
);
const arbAlgorithm = fc.constantFrom<Algorithm>(
  'fixed-window',
  'sliding-window',
  'sliding-log',
  'token-bucket',
  'gcra',
);

/**
 * Runs `steps` against a fresh limiter of `policy`; after every denial a step that honours it
 * waits exactly its `retryAfterMs` and must be admitted. Returns how many honoured denials each
 * source gave.
 */
async function honoured(
  kind: StoreKind,
  policies: PolicyInput | PolicyInput[],
  steps: readonly Step[],
  { denyCache, cost = 1 }: { denyCache: boolean; cost?: number },
): Promise<Map<DecisionSource, number>> {
  const clock = { nowMs: T0 };
  const now = () => clock.nowMs;
  const limiter = createLimiter({
    policies: Array.isArray(policies) ? policies : [policies],
    store: storeOf(kind, now),
    clock: now,
    breaker: false,
    prefix: `ra${runs++}`,
    ...(!denyCache && { denyCache: false }),
  });
  const bySource = new Map<DecisionSource, number>();
  let last = await limiter.check({ identity: 'client', cost });
  for (const step of steps) {
    const waitMs = last.retryAfterMs;
    if (!last.allowed && step.honour && waitMs > 0) {
      clock.nowMs += waitMs;
      const source = last.source;
      last = await limiter.check({ identity: 'client', cost });
      expect(last, `told to wait ${waitMs} ms by ${source}, then denied`).toMatchObject({ allowed: true });
      bySource.set(source, (bySource.get(source) ?? 0) + 1);
    } else {
      clock.nowMs += step.gapMs;
      last = await limiter.check({ identity: 'client', cost });
    }
  }
  return bySource;
}

/** Runs the property and checks that `source` was honoured at least once over the runs. */
async function eachSource(
  source: DecisionSource,
  arb: fc.Arbitrary<[PolicyInput, Step[]]>,
  run: (policy: PolicyInput, steps: Step[]) => Promise<Map<DecisionSource, number>>,
  numRuns: number,
): Promise<void> {
  let seen = 0;
  await fc.assert(
    fc.asyncProperty(arb, async ([policy, steps]) => {
      seen += (await run(policy, steps)).get(source) ?? 0;
    }),
    { numRuns },
  );
  expect(seen, `no denial from ${source} was honoured`).toBeGreaterThan(0);
}

const windowPolicy = fc
  .record({
    algorithm: arbAlgorithm,
    limit: fc.integer({ min: 1, max: 5 }),
    windowMs: fc.integer({ min: 1000, max: 60_000 }),
  })
  .map(({ algorithm, limit, windowMs }): PolicyInput => ({ name: 'p', algorithm, limit, window: windowMs }));

describe.each<StoreKind>(['memory', 'redis'])(
  'a client that waits the Retry-After it was told (%s)',
  (kind) => {
    const numRuns = kind === 'memory' ? 200 : 50;

    it('is admitted after a denial of the store', async () => {
      await eachSource(
        'store',
        fc.tuple(windowPolicy, arbSteps),
        (p, s) => honoured(kind, p, s, { denyCache: false }),
        numRuns,
      );
    }, 60_000);

    it('is admitted after a denial of the deny cache', async () => {
      await eachSource(
        'deny-cache',
        fc.tuple(windowPolicy, arbSteps),
        (p, s) => honoured(kind, p, s, { denyCache: true }),
        numRuns,
      );
    }, 60_000);

    it('is admitted after a remembered denial of a lease take', async () => {
      const leased = fc.tuple(windowPolicy, fc.integer({ min: 1, max: 4 }), fc.boolean()).map(
        ([p, units, adaptive]): PolicyInput => ({
          ...p,
          lease: { units: Math.min(units, p.limit as number), ttlMs: '1s', adaptive },
        }),
      );
      await eachSource(
        'lease',
        fc.tuple(leased, arbSteps),
        (p, s) => honoured(kind, p, s, { denyCache: false }),
        numRuns,
      );
    }, 60_000);

    it('is admitted after a denial of the local stage, whatever the cost and the policies beside it', async () => {
      const staged = fc
        .tuple(windowPolicy, fc.integer({ min: 1, max: 4 }), fc.constantFrom('1/s', '5/s', '20/s'))
        .map(([p, burst, rate]): PolicyInput => ({ ...p, local: { burst, rate } }));
      const beside = fc.option(windowPolicy.map((p): PolicyInput => ({ ...p, name: 'beside' })));
      const arb = fc.tuple(staged, beside, arbSteps, fc.boolean(), fc.integer({ min: 1, max: 3 }));
      let seen = 0;
      await fc.assert(
        fc.asyncProperty(arb, async ([policy, other, steps, denyCache, cost]) => {
          const policies = other === null ? [policy] : [policy, other];
          // A cost a policy can never admit is denied for good (no wait to honour).
          const fits = Math.min(cost, ...policies.map((p) => p.limit as number));
          seen += (await honoured(kind, policies, steps, { denyCache, cost: fits })).get('local-stage') ?? 0;
        }),
        { numRuns },
      );
      expect(seen).toBeGreaterThan(0);
    }, 60_000);

    it('is admitted after a ban', async () => {
      const banned = fc
        .tuple(windowPolicy, fc.integer({ min: 500, max: 90_000 }))
        .map(([p, blockMs]): PolicyInput => ({ ...p, ban: { blockMs } }));
      let seen = 0;
      await fc.assert(
        fc.asyncProperty(fc.tuple(banned, arbSteps, fc.boolean()), async ([policy, steps, denyCache]) => {
          const bySource = await honoured(kind, policy, steps, { denyCache });
          seen += (bySource.get('store') ?? 0) + (bySource.get('deny-cache') ?? 0);
        }),
        { numRuns },
      );
      expect(seen).toBeGreaterThan(0);
    }, 60_000);
  },
);
