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

/** One run: the policies, the schedule, the deny cache on or off, each request's cost. */
interface Run {
  readonly policies: PolicyInput[];
  readonly steps: readonly Step[];
  readonly denyCache: boolean;
  readonly cost: number;
}

/**
 * Runs `steps` against a fresh limiter of `policies`; after every denial a step that honours it
 * waits exactly its `retryAfterMs` and must be admitted. Returns how many honoured denials each
 * source gave.
 */
async function honoured(
  kind: StoreKind,
  { policies, steps, denyCache, cost }: Run,
): Promise<Map<DecisionSource, number>> {
  const clock = { nowMs: T0 };
  const now = () => clock.nowMs;
  const limiter = createLimiter({
    policies,
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

const windowPolicy = fc
  .record({
    algorithm: arbAlgorithm,
    limit: fc.integer({ min: 1, max: 5 }),
    windowMs: fc.integer({ min: 1000, max: 60_000 }),
  })
  .map(({ algorithm, limit, windowMs }): PolicyInput => ({ name: 'p', algorithm, limit, window: windowMs }));

/** Runs of one policy, cost 1, the deny cache as given (or either). */
const runsOf = (policy: fc.Arbitrary<PolicyInput>, denyCache: fc.Arbitrary<boolean>): fc.Arbitrary<Run> =>
  fc
    .tuple(policy, arbSteps, denyCache)
    .map(([p, steps, cache]): Run => ({ policies: [p], steps, denyCache: cache, cost: 1 }));

const leased = fc.tuple(windowPolicy, fc.integer({ min: 1, max: 4 }), fc.boolean()).map(
  ([p, units, adaptive]): PolicyInput => ({
    ...p,
    lease: { units: Math.min(units, p.limit as number), ttlMs: '1s', adaptive },
  }),
);
const banned = fc
  .tuple(windowPolicy, fc.integer({ min: 500, max: 90_000 }))
  .map(([p, blockMs]): PolicyInput => ({ ...p, ban: { blockMs } }));
/** A staged policy, maybe another beside it, costs 1 to 3 (at most the smallest limit: a cost no policy admits is denied for good, with no wait). */
const staged = fc
  .tuple(
    fc
      .tuple(windowPolicy, fc.integer({ min: 1, max: 4 }), fc.constantFrom('1/s', '5/s', '20/s'))
      .map(([p, burst, rate]): PolicyInput => ({ ...p, local: { burst, rate } })),
    fc.option(windowPolicy.map((p): PolicyInput => ({ ...p, name: 'beside' }))),
    arbSteps,
    fc.boolean(),
    fc.integer({ min: 1, max: 3 }),
  )
  .map(([p, other, steps, denyCache, cost]): Run => {
    const policies = other === null ? [p] : [p, other];
    return { policies, steps, denyCache, cost: Math.min(cost, ...policies.map((q) => q.limit as number)) };
  });

/** Per source: the runs that meet it, and the sources a denial of it is answered with. */
const SOURCES: [string, fc.Arbitrary<Run>, DecisionSource[]][] = [
  ['the store', runsOf(windowPolicy, fc.constant(false)), ['store']],
  ['the deny cache', runsOf(windowPolicy, fc.constant(true)), ['deny-cache']],
  ['a remembered lease take', runsOf(leased, fc.constant(false)), ['lease']],
  ['the local stage, whatever the cost and the policies beside it', staged, ['local-stage']],
  ['a ban', runsOf(banned, fc.boolean()), ['store', 'deny-cache']],
];

describe.each<StoreKind>(['memory', 'redis'])(
  'a client that waits the Retry-After it was told (%s)',
  (kind) => {
    const numRuns = kind === 'memory' ? 200 : 50;
    it.each(SOURCES)(
      'is admitted after a denial of %s',
      async (_, arb, sources) => {
        let seen = 0;
        await fc.assert(
          fc.asyncProperty(arb, async (run) => {
            const bySource = await honoured(kind, run);
            for (const source of sources) seen += bySource.get(source) ?? 0;
          }),
          { numRuns },
        );
        expect(seen, `no denial from ${sources.join(' or ')} was honoured`).toBeGreaterThan(0);
      },
      60_000,
    );
  },
);

describe('a client in debt after a settle', () => {
  it.each<Algorithm>(['token-bucket', 'gcra'])(
    'is told the whole wait by the deny cache (%s: a refill and the debt of one limit)',
    async (algorithm) => {
      const clock = { nowMs: T0 };
      const now = () => clock.nowMs;
      const policy: PolicyInput = { name: 'b', algorithm, burst: 5, rate: '1/s' };
      const limiter = createLimiter({
        policies: [policy],
        store: new MemoryStore({ clock: now }),
        clock: now,
      });
      // Reserved 1, used 10: the bucket owes 5 beyond empty.
      expect(await limiter.settle(await limiter.check({ identity: 'a', reserve: true }), 10)).toBe('settled');
      const fromStore = await limiter.check({ identity: 'a' });
      const cached = await limiter.check({ identity: 'a' });
      expect([fromStore.source, cached.source]).toEqual(['store', 'deny-cache']);
      expect(cached.retryAfterMs).toBe(fromStore.retryAfterMs);
      clock.nowMs += cached.retryAfterMs;
      expect((await limiter.check({ identity: 'a' })).allowed).toBe(true);
    },
  );
});
