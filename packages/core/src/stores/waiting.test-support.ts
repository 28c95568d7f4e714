/**
 * Test support for waiting (`maxWaitMs`): random histories of checks that may reserve a turn and
 * cancels of reserved turns, run on several stores in lockstep, and the rate bound their turns keep.
 */
import fc from 'fast-check';
import { expect } from 'vitest';
import { costArb, timeStepArb } from '../algorithms/testing.test-support.js';
import type { CompiledPolicy, StoreEntry, StoreSettleEntry, StoreVerdict } from '../types.js';
import type { SettleSide } from './settle.test-support.js';

/** A check of every policy (a cost and a maxWaitMs each), or the cancel of a turn still ahead. */
export type WaitOp =
  | {
      readonly kind: 'check';
      readonly costs: readonly number[];
      readonly maxWaitMs: readonly number[];
      readonly dtMs: number;
    }
  | { readonly kind: 'cancel'; readonly pick: number; readonly dtMs: number };

/** Units a policy admitted at a turn (ms): the check's time plus its wait. */
export interface Turn {
  readonly atMs: number;
  readonly cost: number;
  /** The check that admitted it (a cancel drops the check's turns). */
  readonly check: number;
}

/** Histories for `policies` (one identity): checks with random costs and waits, and cancels; `frozen`: no time passes. */
export const waitOpsArb = (
  policies: readonly CompiledPolicy[],
  frozen: boolean,
  maxLength = 30,
): fc.Arbitrary<WaitOp[]> => {
  const windowMs = Math.min(...policies.map((p) => p.windowMs));
  const dtMs = frozen ? fc.constant(0) : timeStepArb(windowMs, false);
  const check = fc.record({
    kind: fc.constant('check' as const),
    costs: fc.tuple(...policies.map((p) => costArb(p))),
    maxWaitMs: fc.tuple(
      ...policies.map((p) =>
        fc.oneof(fc.constant(0), fc.integer({ min: 1, max: Math.ceil(3 * p.windowMs) })),
      ),
    ),
    dtMs,
  });
  const cancel = fc.record({ kind: fc.constant('cancel' as const), pick: fc.nat(), dtMs });
  return fc.array(fc.oneof({ arbitrary: check, weight: 4 }, { arbitrary: cancel, weight: 1 }), {
    minLength: 1,
    maxLength,
  });
};

/** A check that reserved a turn: what a cancel settles. */
interface Reserved {
  readonly check: number;
  readonly atMs: number;
  readonly entries: readonly StoreEntry[];
  readonly verdicts: readonly StoreVerdict[];
}

/**
 * Runs `ops` on every side in lockstep from `t0` (keys `<prefix>:{id}:<policy>`), expecting the
 * same verdicts and settle flags from all, every told turn within its entry's maxWaitMs, and
 * returns each policy's admitted turns (a cancelled check's left out). A cancel settles a check
 * whose turn is still ahead with `actualUnits: 0` and each entry's `waitMs`. Expiry is made the
 * same on every side, as `expectSameSteps` makes it.
 */
export async function runWaitOps(
  sides: readonly SettleSide[],
  policies: readonly CompiledPolicy[],
  ops: readonly WaitOp[],
  t0: number,
  prefix: string,
): Promise<Turn[][]> {
  const turns: Turn[][] = policies.map(() => []);
  const pending: Reserved[] = [];
  const expiresAtMs = new Map<string, number>();
  let now = t0;
  for (const [n, op] of ops.entries()) {
    now += op.dtMs;
    const expired = [...expiresAtMs].filter(([, at]) => now > at).map(([key]) => key);
    for (const key of expired) expiresAtMs.delete(key);
    for (const side of sides) {
      if (expired.length > 0) await side.forget(expired);
      side.at(now);
    }
    if (op.kind === 'cancel') {
      const ahead = pending.filter((r) => r.verdicts.some((v) => r.atMs + (v.waitMs ?? 0) > now));
      const cancelled = ahead[op.pick % Math.max(1, ahead.length)];
      if (cancelled === undefined) continue;
      pending.splice(pending.indexOf(cancelled), 1);
      const settles: StoreSettleEntry[] = cancelled.entries.map((e, i) => ({
        key: e.key,
        policy: e.policy,
        reservedUnits: e.cost,
        actualUnits: 0,
        reservedAgoMs: now - cancelled.atMs,
        waitMs: cancelled.verdicts[i]?.waitMs,
      }));
      const flags = await Promise.all(sides.map((side) => side.store.settle(settles)));
      for (const f of flags) expect(f, `cancel at op ${n}`).toEqual(flags[0]);
      for (const list of turns)
        list.splice(0, list.length, ...list.filter((t) => t.check !== cancelled.check));
      continue;
    }
    const entries: StoreEntry[] = policies.map((policy, i) => ({
      key: `${prefix}:{id}:${policy.name}`,
      policy,
      cost: op.costs[i] as number,
      maxWaitMs: op.maxWaitMs[i] as number,
    }));
    const answers: StoreVerdict[][] = [];
    for (const side of sides) answers.push(await side.store.decide(entries, 'consume'));
    const verdicts = answers[0] as StoreVerdict[];
    for (const a of answers) expect(a, `check at op ${n}`).toEqual(verdicts);
    for (const [i, v] of verdicts.entries()) {
      if (v.waitMs === undefined) continue;
      expect(v.allowed && v.retryAfterMs === 0 && Number.isInteger(v.waitMs)).toBe(true);
      expect(v.waitMs).toBeGreaterThanOrEqual(1);
      expect(v.waitMs).toBeLessThanOrEqual(entries[i]?.maxWaitMs as number);
    }
    if (!verdicts.every((v) => v.allowed)) continue;
    for (const [i, v] of verdicts.entries()) {
      const e = entries[i] as StoreEntry;
      expiresAtMs.set(e.key, now + v.resetMs + 1);
      turns[i]?.push({ atMs: now + (v.waitMs ?? 0), cost: e.cost, check: n });
    }
    if (verdicts.some((v) => v.waitMs !== undefined))
      pending.push({ check: n, atMs: now, entries, verdicts });
  }
  return turns;
}

/**
 * The first breach of the policy's bound by `turns`, or undefined: over every interval [a, b] between
 * two turns, the units admitted in it are at most the burst plus the rate over b - a + 1 ms (a told
 * turn is its exact time rounded up to a whole ms wait: up to 1 ms late), plus the slack the
 * algorithms compare with.
 */
export function turnBoundBreach(policy: CompiledPolicy, turns: readonly Turn[]): string | undefined {
  const { limit, intervalMs, algorithm } = policy;
  const slack = (3 * (algorithm === 'gcra' ? 0.0009765625 : 0.001)) / intervalMs + 1e-6;
  const sorted = [...turns].sort((x, y) => x.atMs - y.atMs);
  for (let i = 0; i < sorted.length; i++) {
    let units = 0;
    for (let j = i; j < sorted.length; j++) {
      units += (sorted[j] as Turn).cost;
      const spanMs = (sorted[j] as Turn).atMs - (sorted[i] as Turn).atMs;
      if (units > limit + (spanMs + 1) / intervalMs + slack) {
        return `${units} units in ${spanMs} ms from ${(sorted[i] as Turn).atMs} (limit ${limit}, ${intervalMs} ms per unit)`;
      }
    }
  }
  return undefined;
}
