/**
 * Test support for the settle tests: a MemoryStore and a RedisStore driven by one explicit
 * clock, and random histories of reservations and settles run against any store.
 */
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { costArb, timeStepArb } from '../algorithms/testing.test-support.js';
import type { CompiledPolicy, Store, StoreEntry, StoreVerdict } from '../types.js';
import { MemoryStore } from './memory-store.js';
import { RedisStore } from './redis-store.js';

/** A store with the clock it reads; `at(ms)` moves the clock. */
export interface ClockedStore {
  readonly store: Store & Required<Pick<Store, 'settle'>>;
  at(ms: number): void;
}

/** One step of a history: a reservation (a consuming check) or the settle of an earlier one. */
export type SettleOp =
  | { readonly kind: 'reserve'; readonly key: number; readonly cost: number; readonly dtMs: number }
  | { readonly kind: 'settle'; readonly pick: number; readonly ratio: number; readonly dtMs: number };

/** What a step gave: the check's verdict, or the settle's flag; and a peek of every key after it. */
export interface StepResult {
  readonly verdict?: StoreVerdict;
  readonly settled?: boolean;
  readonly peek: readonly StoreVerdict[];
}

/**
 * Random histories for `policy`: reservations of its random costs on three keys, and settles of
 * a random earlier admitted reservation to `ratio` x its cost (0, below, equal, above, far above;
 * whole for sliding-log), time going forwards and (with `backwards`) backwards.
 */
export const settleOpsArb = (policy: CompiledPolicy, backwards: boolean): fc.Arbitrary<SettleOp[]> =>
  fc.array(
    fc.oneof(
      fc.record({
        kind: fc.constant('reserve' as const),
        key: fc.integer({ min: 0, max: 2 }),
        cost: costArb(policy),
        dtMs: timeStepArb(policy.windowMs, backwards),
      }),
      fc.record({
        kind: fc.constant('settle' as const),
        pick: fc.nat(),
        ratio: fc.constantFrom(0, 0.25, 0.5, 1, 1.5, 2, 5),
        dtMs: fc.oneof(fc.constant(0), timeStepArb(policy.windowMs, backwards)),
      }),
    ),
    { minLength: 1, maxLength: 30 },
  );

/** The actual units of a settle: `ratio` x the reserved cost, whole where the algorithm wants it. */
export function actualOf(policy: CompiledPolicy, cost: number, ratio: number): number {
  const units = cost * ratio;
  return policy.algorithm === 'sliding-log' ? Math.round(units) : units;
}

/** A store side for `runSettleOps`: a clocked store and how to forget keys in it. */
export interface SettleSide extends ClockedStore {
  forget(keys: readonly string[]): Promise<unknown>;
}

/**
 * Runs `ops` against every side in lockstep from `t0` (reservations are settled at most once each)
 * and returns each side's step results. Expiry is made the same on every side as
 * `expectSameSteps` makes it: a key a check charged at `t` with a reset of `resetMs` is forgotten
 * on every side once the clock passed `t + resetMs + 1` (a settle only keeps a key longer).
 */
export async function runSettleOps(
  sides: readonly SettleSide[],
  policy: CompiledPolicy,
  ops: readonly SettleOp[],
  t0: number,
  prefix: string,
): Promise<StepResult[][]> {
  const entryOf = (key: number, cost: number): StoreEntry => ({ key: `${prefix}:{k${key}}:p`, policy, cost });
  const all = [0, 1, 2].map((k) => entryOf(k, 1));
  const pending: { entry: StoreEntry; atMs: number }[] = [];
  const expiresAtMs = new Map<string, number>();
  const out: StepResult[][] = sides.map(() => []);
  let now = t0;
  for (const op of ops) {
    now += op.dtMs;
    const expired = [...expiresAtMs].filter(([, at]) => now > at).map(([key]) => key);
    for (const key of expired) expiresAtMs.delete(key);
    const settle =
      op.kind === 'settle' && pending.length > 0 ? pending.splice(op.pick % pending.length, 1)[0] : undefined;
    let admitted: StoreEntry | undefined;
    for (const [s, side] of sides.entries()) {
      if (expired.length > 0) await side.forget(expired);
      side.at(now);
      let step: { verdict?: StoreVerdict; settled?: boolean } = {};
      if (op.kind === 'reserve') {
        const entry = entryOf(op.key, op.cost);
        const [verdict] = (await side.store.decide([entry], 'consume')) as [StoreVerdict];
        if (verdict.allowed) {
          admitted = entry;
          expiresAtMs.set(entry.key, now + verdict.resetMs + 1);
        }
        step = { verdict };
      } else if (settle !== undefined && op.kind === 'settle') {
        const { entry, atMs } = settle;
        const [settled] = (await side.store.settle([
          {
            key: entry.key,
            policy,
            reservedUnits: entry.cost,
            actualUnits: actualOf(policy, entry.cost, op.ratio),
            reservedAgoMs: Math.max(0, now - atMs),
          },
        ])) as [boolean];
        step = { settled };
      }
      const peek = await Promise.all(all.map((e) => side.store.decide([e], 'peek')));
      (out[s] as StepResult[]).push({ ...step, peek: peek.map((v) => v[0] as StoreVerdict) });
    }
    if (admitted !== undefined) pending.push({ entry: admitted, atMs: now });
  }
  return out;
}

/** A MemoryStore on an explicit clock. */
export function memorySettleSide(): SettleSide {
  let now = 0;
  const store = new MemoryStore({ clock: () => now });
  return { store, at: (ms) => (now = ms), forget: (keys) => store.reset(keys) };
}

/** A RedisStore on `client` at an explicit time (the scripts take it as ARGV[1]). */
export function redisSettleSide(client: Redis): SettleSide {
  let now = 0;
  const store = new RedisStore({ client, clock: () => now });
  return {
    store: store as ClockedStore['store'],
    at: (ms) => (now = ms),
    forget: (keys) => client.del(...keys),
  };
}

/** Units admitted over windows, from the history of admitted reservations and their settles. */
export interface Admitted {
  readonly atMs: number;
  readonly reserved: number;
  readonly actual: number;
}

/**
 * What `policy` allows before admitting `cost` at `now`, given the requests admitted (and settled)
 * before: false when the units counted against the policy, plus `cost`, exceed its allowance.
 */
export function withinPolicy(
  policy: CompiledPolicy,
  before: readonly Admitted[],
  now: number,
  cost: number,
): boolean {
  const tol = 1e-6;
  const { algorithm, limit, windowMs, intervalMs } = policy;
  if (algorithm === 'token-bucket' || algorithm === 'gcra') {
    const slack = (3 * (algorithm === 'gcra' ? 0.0009765625 : 0.001)) / intervalMs;
    // Over every interval [t_i, now]: what was admitted from t_i on, plus cost, fits burst + rate x T.
    let sum = 0;
    for (let i = before.length - 1; i >= 0; i--) {
      const a = before[i] as Admitted;
      sum += a.actual;
      if (sum + cost > limit + (now - a.atMs) / intervalMs + slack + tol) return false;
    }
    return true;
  }
  if (algorithm === 'sliding-log') {
    const since = Math.floor(now * 1000 + 0.5) - windowMs * 1000;
    const live = before
      .filter((a) => Math.floor(a.atMs * 1000 + 0.5) > since)
      .reduce((s, a) => s + a.actual, 0);
    return live + cost <= limit;
  }
  // Fixed and sliding window: at most the limit in each epoch-aligned window.
  const win = Math.floor(now / windowMs);
  const inWindow = before
    .filter((a) => Math.floor(a.atMs / windowMs) === win)
    .reduce((s, a) => s + a.actual, 0);
  return inWindow + cost <= limit + tol;
}
