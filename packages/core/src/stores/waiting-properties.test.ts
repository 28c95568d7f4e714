/**
 * Properties of waiting for a turn (`maxWaitMs`), MemoryStore and RedisStore (the scripts on a real
 * redis-server) run in lockstep at one explicit clock, frozen or moving: the same verdicts; a turn
 * never beyond maxWaitMs; the turns admitted (cancelled ones left out) within the policy's bound;
 * a cancel gives the next check the turn it would have had.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { useRedis } from '../../../../test/support/redis-fixture.js';
import { costArb, policyArb } from '../algorithms/testing.test-support.js';
import type { CompiledPolicy, StoreEntry, StoreVerdict } from '../types.js';
import { memorySettleSide, redisSettleSide, type SettleSide } from './settle.test-support.js';
import { runWaitOps, type Turn, turnBoundBreach, type WaitOp, waitOpsArb } from './waiting.test-support.js';

const redis = useRedis();
let run = 0;
const fresh = (): string => `wp${++run}`;

const T0 = 1_764_400_200_000;
const BUCKETS = ['token-bucket', 'gcra'] as const;
const CLOCKS = [
  ['frozen', true],
  ['moving', false],
] as const;

/** Two policies of one identity, each its own algorithm and numbers (names distinct). */
const twoPoliciesArb: fc.Arbitrary<CompiledPolicy[]> = fc
  .tuple(fc.constantFrom(...BUCKETS), fc.constantFrom(...BUCKETS))
  .chain(([a, b]) => fc.tuple(policyArb(a), policyArb(b)))
  .map(([a, b]) => [
    { ...a, name: 'a' },
    { ...b, name: 'b' },
  ]);

/**
 * Histories of `policiesArb`'s policies (one identity) on both stores in lockstep: same verdicts
 * and settles, turns within maxWaitMs (`runWaitOps`) and each policy's turns within its bound.
 */
function lockstepProperty(policiesArb: fc.Arbitrary<CompiledPolicy[]>, frozen: boolean, numRuns: number) {
  return fc.assert(
    fc.asyncProperty(
      policiesArb.chain((ps) => fc.tuple(fc.constant(ps), waitOpsArb(ps, frozen))),
      async ([policies, ops]) => {
        const sides = [memorySettleSide(), redisSettleSide(redis.client)];
        const turns = await runWaitOps(sides, policies, ops, T0, fresh());
        for (const [i, policy] of policies.entries())
          expect(turnBoundBreach(policy, turns[i] as Turn[])).toBeUndefined();
      },
    ),
    { numRuns },
  );
}

describe.each(CLOCKS)('waiting with a %s clock, both stores in lockstep', (_, frozen) => {
  it.each(BUCKETS)('%s: same verdicts, turns within maxWaitMs and the bound, cancels included', (algorithm) =>
    lockstepProperty(
      policyArb(algorithm).map((p) => [p]),
      frozen,
      40,
    ),
  );

  it('two policies of one identity, costs above 1: each reserves its own turn, all or nothing', () =>
    lockstepProperty(twoPoliciesArb, frozen, 30));
});

describe.each([
  ['MemoryStore', memorySettleSide],
  ['RedisStore', (): SettleSide => redisSettleSide(redis.client)],
] as const)('%s: a cancel restores the turn for the next check', (_, sideOf) => {
  it.each(BUCKETS)(
    '%s: the next check gets the wait it would have had without the reservation',
    async (algorithm) => {
      await fc.assert(
        fc.asyncProperty(
          policyArb(algorithm).chain((policy) =>
            fc.record({
              policy: fc.constant(policy),
              prefix: waitOpsArb([policy], false, 8),
              cost: costArb(policy).filter((c) => c <= policy.limit),
              next: costArb(policy).filter((c) => c <= policy.limit),
              share: fc.double({ min: 0, max: 0.99, noNaN: true }),
            }),
          ),
          async ({ policy, prefix, cost, next, share }) => {
            const side = sideOf();
            const id = fresh();
            const x: StoreEntry = { key: `${id}:{x}:p`, policy, cost, maxWaitMs: 10 * policy.windowMs };
            const y: StoreEntry = { ...x, key: `${id}:{y}:p` };
            // The same history on both keys (no cancels), then a turn reserved on x only.
            const at = await replay(side, prefix, [x, y]);
            const [turn] = (await side.store.decide([x], 'consume')) as [StoreVerdict];
            if (turn.waitMs === undefined) return;
            const ago = Math.floor(turn.waitMs * share);
            side.at(at + ago);
            await side.store.settle([
              {
                key: x.key,
                policy,
                reservedUnits: cost,
                actualUnits: 0,
                reservedAgoMs: ago,
                waitMs: turn.waitMs,
              },
            ]);
            const [fromX] = (await side.store.decide([{ ...x, cost: next }], 'peek')) as [StoreVerdict];
            const [fromY] = (await side.store.decide([{ ...y, cost: next }], 'peek')) as [StoreVerdict];
            // Whole ms, rounded up, from sums in another order: at most 1 ms apart.
            expect(Math.abs(fromX.retryAfterMs - fromY.retryAfterMs)).toBeLessThanOrEqual(1);
          },
        ),
        { numRuns: 60 },
      );
    },
  );
});

/** Runs the checks of `ops` (a cancel is skipped) on each entry's key in turn; returns the time after. */
async function replay(
  side: SettleSide,
  ops: readonly WaitOp[],
  entries: readonly StoreEntry[],
): Promise<number> {
  let now = T0;
  for (const op of ops) {
    now += op.dtMs;
    side.at(now);
    if (op.kind !== 'check') continue;
    for (const e of entries) {
      await side.store.decide([{ ...e, cost: op.costs[0] as number, maxWaitMs: op.maxWaitMs[0] }], 'consume');
    }
  }
  return now;
}
