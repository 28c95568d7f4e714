/**
 * Test support for the algorithm, memory-store and decide-script tests (not shipped:
 * nothing in src/index.ts reaches it). Generators, a policy factory and the invariant
 * checks of design.md, written once against a `Decide` function so the same checks run
 * against MemoryStore and the Redis decide script.
 */
import fc from 'fast-check';
import { expect } from 'vitest';
import { chargedByRule } from '../stores/charge-rule.js';
import { MemoryStore } from '../stores/memory-store.js';
import type { Algorithm, CompiledPolicy, StoreEntry, StoreMode, StoreVerdict } from '../types.js';
import { ALGORITHM_NAMES } from './registry.js';

/** A registered algorithm that counts units (every one but concurrency, which holds slots). */
export type RateAlgorithm = Exclude<Algorithm, 'concurrency'>;

/**
 * Every registered algorithm that counts units: each test written over it covers such an algorithm
 * as soon as it is registered. The concurrency algorithm holds slots, not units (no cost, refill or
 * settle): its own tests (stores/concurrency*.test.ts, redis/concurrency-script.test.ts).
 */
export const ALL_ALGORITHMS: readonly RateAlgorithm[] = ALGORITHM_NAMES.filter(
  (name): name is RateAlgorithm => name !== 'concurrency',
);

/** Decide `entries` at the explicit time `nowMs`. */
export type Decide = (
  entries: readonly StoreEntry[],
  mode: StoreMode,
  nowMs: number,
) => Promise<StoreVerdict[]>;

/** A compiled policy the way definePolicy builds one: intervalMs = windowMs / limit. */
export function makePolicy(
  algorithm: Algorithm,
  limit: number,
  windowMs: number,
  name?: string,
): CompiledPolicy {
  return {
    name: name ?? algorithm,
    algorithm,
    limit,
    windowMs,
    intervalMs: windowMs / limit,
    cost: 1,
    failMode: 'closed',
    shadow: false,
    scope: 'identity',
  };
}

/** A MemoryStore whose clock is the `nowMs` of each call. */
export function memoryDecide(options: { maxKeys?: number } = {}): { decide: Decide; store: MemoryStore } {
  let now = 0;
  const store = new MemoryStore({ clock: () => now, ...options });
  return {
    store,
    decide: (entries, mode, nowMs) => {
      now = nowMs;
      return store.decide(entries, mode);
    },
  };
}

/** A start time like Redis TIME gives: epoch ms with microseconds. */
export const startTimeArb = fc
  .integer({ min: 1_700_000_000_000_000, max: 1_800_000_000_000_000 })
  .map((us) => us / 1000);

/**
 * Policies: small limits and windows; with `wide`, also large limits (up to 5000, 60 for
 * sliding-log) and windows up to a day.
 */
export const policyArb = (algorithm: Algorithm, wide = false): fc.Arbitrary<CompiledPolicy> => {
  const small = fc.record({
    limit: fc.integer({ min: 1, max: 12 }),
    windowMs: fc.oneof(fc.constantFrom(1000, 60_000, 999, 7, 3), fc.integer({ min: 1, max: 100_000 })),
  });
  const large = fc.record({
    limit: fc.integer({ min: 13, max: algorithm === 'sliding-log' ? 60 : 5000 }),
    windowMs: fc.oneof(fc.constantFrom(3_600_000, 86_400_000, 1), fc.integer({ min: 1, max: 10_000_000 })),
  });
  return (wide ? fc.oneof(small, large) : small).map(({ limit, windowMs }) =>
    makePolicy(algorithm, limit, windowMs),
  );
};

/**
 * Costs: one unit (the script's short form), whole units (sometimes above the limit) and,
 * where allowed, fractions.
 */
export const costArb = (policy: CompiledPolicy): fc.Arbitrary<number> => {
  const whole = fc.oneof(fc.constant(1), fc.integer({ min: 1, max: policy.limit + 2 }));
  if (policy.algorithm === 'sliding-log') return whole;
  return fc.oneof(
    { arbitrary: whole, weight: 3 },
    { arbitrary: fc.integer({ min: 1, max: 40 * policy.limit }).map((n) => n / 40), weight: 1 },
  );
};

/**
 * Time steps in ms relative to a window of `windowMs`: zero (a repeat of the same instant),
 * small, fractional, window-sized and huge; with `backwards`, the same sizes back in time too
 * (a jump back of 1e7 ms included).
 */
export const timeStepArb = (windowMs: number, backwards: boolean): fc.Arbitrary<number> => {
  const w = windowMs;
  const sizes = fc.oneof(
    fc.integer({ min: 1, max: 2 * w }),
    fc.integer({ min: 1, max: 4000 }).map((us) => us / 1000),
    fc.integer({ min: 1, max: 8 }).map((k) => (k * w) / 4),
    fc.constant(1e7),
  );
  const forward = fc.oneof({ arbitrary: fc.constant(0), weight: 1 }, { arbitrary: sizes, weight: 4 });
  if (!backwards) return forward;
  return fc.oneof({ arbitrary: forward, weight: 3 }, { arbitrary: sizes.map((d) => -d), weight: 2 });
};

/** Time steps for histories of one policy (see `timeStepArb`). */
export const stepArb = (policy: CompiledPolicy, backwards: boolean): fc.Arbitrary<number> =>
  timeStepArb(policy.windowMs, backwards);

export interface Op {
  readonly key: number;
  readonly cost: number;
  readonly dtMs: number;
  readonly mode: StoreMode;
}

export const opsArb = (policy: CompiledPolicy, backwards: boolean, maxLength = 30): fc.Arbitrary<Op[]> =>
  fc.array(
    fc.record({
      key: fc.integer({ min: 0, max: 2 }),
      cost: costArb(policy),
      dtMs: stepArb(policy, backwards),
      mode: fc.constantFrom<StoreMode>('consume', 'consume', 'consume', 'peek'),
    }),
    { minLength: 1, maxLength, size: '+1' },
  );

/** The contract every verdict keeps, whatever the history. */
export function expectWellFormed(v: StoreVerdict, policy: CompiledPolicy, cost: number): void {
  expect(Number.isInteger(v.remaining)).toBe(true);
  expect(v.remaining).toBeGreaterThanOrEqual(0);
  expect(v.remaining).toBeLessThanOrEqual(policy.limit);
  expect(v.resetMs).toBeGreaterThanOrEqual(0);
  expect(Number.isFinite(v.resetMs)).toBe(true);
  if (v.allowed) {
    expect(v.retryAfterMs).toBe(0);
  } else if (cost > policy.limit) {
    expect(v.retryAfterMs).toBe(-1);
  } else {
    expect(v.retryAfterMs).toBeGreaterThanOrEqual(0);
  }
}

/**
 * Runs `ops` on keys `<prefix>:{k<n>}:<policy>` and checks, at every step: well-formed
 * verdicts; peek predicts the verdict; a denied request or a peek changes nothing; an
 * admitted request takes its whole cost exactly once; time going backwards gives no more
 * than the latest time seen: after a step back a key has no more remaining than it had at
 * the latest time before the step, nor after its charge than at the latest time; at the end, idle keys are exactly full. Returns the verdicts.
 */
export async function runInvariants(
  decide: Decide,
  policy: CompiledPolicy,
  ops: readonly Op[],
  t0: number,
  prefix: string,
): Promise<StoreVerdict[]> {
  let now = t0;
  let maxNow = t0;
  const seen = new Set<string>();
  const verdicts: StoreVerdict[] = [];
  for (const op of ops) {
    now += op.dtMs;
    const key = `${prefix}:{k${op.key}}:${policy.name}`;
    seen.add(key);
    const entry: StoreEntry = { key, policy, cost: op.cost };
    // A step back in time: what the key holds at the latest time seen, before the step.
    const latestBefore =
      now < maxNow ? ((await decide([entry], 'peek', maxNow)) as [StoreVerdict])[0] : undefined;
    const [before] = (await decide([entry], 'peek', now)) as [StoreVerdict];
    if (latestBefore !== undefined) {
      expect(before.remaining, `${now - maxNow} ms back in time`).toBeLessThanOrEqual(latestBefore.remaining);
    }
    const [v] = (await decide([entry], op.mode, now)) as [StoreVerdict];
    const [after] = (await decide([entry], 'peek', now)) as [StoreVerdict];
    verdicts.push(v);
    for (const x of [before, v, after]) expectWellFormed(x, policy, op.cost);
    expect(v.allowed).toBe(before.allowed);
    if (op.mode === 'peek' || !v.allowed) {
      expect(v).toEqual(before);
      expect(after).toEqual(before);
    } else {
      expect(after.remaining).toBe(v.remaining);
      expect(after.resetMs).toBe(v.resetMs);
      if (Number.isInteger(op.cost)) {
        expect(v.remaining).toBe(before.remaining - op.cost);
      } else {
        expect(v.remaining).toBeGreaterThanOrEqual(before.remaining - Math.ceil(op.cost));
        expect(v.remaining).toBeLessThanOrEqual(before.remaining - Math.floor(op.cost));
      }
    }
    if (now < maxNow) {
      const [latest] = (await decide([entry], 'peek', maxNow)) as [StoreVerdict];
      expect(after.remaining).toBeLessThanOrEqual(latest.remaining);
    }
    maxNow = Math.max(maxNow, now);
  }
  const idle = maxNow + 100 * policy.windowMs + 1e8;
  for (const key of seen) {
    const [v] = (await decide([{ key, policy, cost: 1 }], 'peek', idle)) as [StoreVerdict];
    expect(v).toEqual({ allowed: true, remaining: policy.limit, resetMs: 0, retryAfterMs: 0 });
  }
  return verdicts;
}

/**
 * Runs a history on one key, then checks the last verdict's promises: the same cost is
 * admitted `retryAfterMs` later (when denied), and the key is full `resetMs` after the
 * last state. Time moves forward only.
 */
export async function checkPromises(
  decide: Decide,
  policy: CompiledPolicy,
  ops: readonly Op[],
  t0: number,
  key: string,
): Promise<void> {
  let now = t0;
  let last: StoreVerdict | undefined;
  let lastCost = 1;
  for (const op of ops) {
    now += Math.abs(op.dtMs);
    [last] = (await decide([{ key, policy, cost: op.cost }], op.mode, now)) as [StoreVerdict];
    lastCost = op.cost;
  }
  if (last === undefined) return;
  const entry: StoreEntry = { key, policy, cost: lastCost };
  if (!last.allowed && last.retryAfterMs >= 0) {
    const [then] = (await decide([entry], 'peek', now + last.retryAfterMs + 0.01)) as [StoreVerdict];
    expect(then.allowed).toBe(true);
  }
  const [full] = (await decide([entry], 'peek', now + last.resetMs + 0.01)) as [StoreVerdict];
  expect(full.remaining).toBe(policy.limit);
}

/** One step of a multi-policy history: which policies apply, their costs, the time step. */
export interface MultiOp {
  readonly identity: number;
  readonly use: readonly boolean[];
  readonly costs: readonly number[];
  readonly dtMs: number;
  readonly mode: StoreMode;
}

/** One to three policies of random algorithms, named p0, p1, p2. */
export const policiesArb: fc.Arbitrary<CompiledPolicy[]> = fc
  .array(fc.constantFrom(...ALL_ALGORITHMS), { minLength: 1, maxLength: 3 })
  .chain((algorithms) =>
    fc.tuple(
      ...algorithms.map((algorithm, i) =>
        policyArb(algorithm, true).map((p) => ({ ...p, name: `p${i}` }) satisfies CompiledPolicy),
      ),
    ),
  );

/**
 * Like `policiesArb`, each policy enforced or shadow at random: with the random subset each step
 * uses (`entriesFor`), calls of one policy of either kind and of every mix of both.
 */
export const mixedPoliciesArb: fc.Arbitrary<CompiledPolicy[]> = policiesArb.chain((policies) =>
  fc.tuple(...policies.map((p) => fc.boolean().map((shadow) => ({ ...p, shadow }) satisfies CompiledPolicy))),
);

/**
 * Which entries of a decision were charged, by the rule of `Store.decide` (`chargedByRule`): in
 * mode 'consume', the enforced entries when every enforced entry allows, the shadow entries when
 * every entry allows; in mode 'peek', none.
 */
export function chargedEntries(
  entries: readonly StoreEntry[],
  verdicts: readonly StoreVerdict[],
  mode: StoreMode,
): boolean[] {
  return mode === 'consume' ? chargedByRule(entries, verdicts) : entries.map(() => false);
}

/** Multi-policy histories; time moves forward only unless `backwards`. */
export const multiOpsArb = (
  policies: readonly CompiledPolicy[],
  backwards = false,
): fc.Arbitrary<MultiOp[]> => {
  const window = Math.max(...policies.map((p) => p.windowMs));
  return fc.array(
    fc.record({
      identity: fc.integer({ min: 0, max: 1 }),
      use: fc.tuple(...policies.map(() => fc.boolean())),
      costs: fc.tuple(
        ...policies.map((p) =>
          p.algorithm === 'sliding-log'
            ? fc.oneof(fc.constant(1), fc.integer({ min: 1, max: p.limit + 1 }))
            : fc.oneof(
                fc.constant(1),
                fc.integer({ min: 1, max: p.limit + 1 }),
                fc.constantFrom(0.5, 1.25, 0.1),
              ),
        ),
      ),
      dtMs: timeStepArb(window, backwards),
      mode: fc.constantFrom<StoreMode>('consume', 'consume', 'consume', 'peek'),
    }),
    { minLength: 1, maxLength: 40, size: '+1' },
  );
};

/** The entries of one multi-policy step for identity `op.identity` (at least one policy). */
export function entriesFor(prefix: string, policies: readonly CompiledPolicy[], op: MultiOp): StoreEntry[] {
  const entries: StoreEntry[] = [];
  policies.forEach((policy, i) => {
    if (op.use[i] || (i === 0 && !op.use.some(Boolean))) {
      entries.push({
        key: `${prefix}:{id${op.identity}}:${policy.name}`,
        policy,
        cost: op.costs[i] as number,
      });
    }
  });
  return entries;
}

/** A `Decide` and how to forget keys in its store (`MemoryStore.reset`, Redis `DEL`). */
export interface DecideSide {
  readonly decide: Decide;
  readonly forget: (keys: readonly string[]) => Promise<unknown>;
}

/**
 * Runs steps (entries, mode, time) through two stores and expects the same verdicts from
 * both at every step. Expiry is made the same on both: a key written at `t` with a reset
 * of `resetMs` expires at `t + resetMs + 1` (the TTL both set), and once the clock has
 * passed that time the key is forgotten on both sides before the next step. (With an
 * explicit time Redis expires keys by its own clock, not the test's, and MemoryStore drops
 * expired keys lazily: after the clock passed a key's expiry and went back, either store
 * could still hold the stale state or not.)
 */
export async function expectSameSteps(
  a: DecideSide,
  b: DecideSide,
  steps: Iterable<{ entries: StoreEntry[]; mode: StoreMode; nowMs: number; label: string }>,
): Promise<void> {
  const expiresAtMs = new Map<string, number>();
  for (const { entries, mode, nowMs, label } of steps) {
    const expired = [...expiresAtMs].filter(([, at]) => nowMs > at).map(([key]) => key);
    if (expired.length > 0) {
      await a.forget(expired);
      await b.forget(expired);
      for (const key of expired) expiresAtMs.delete(key);
    }
    const fromA = await a.decide(entries, mode, nowMs);
    const fromB = await b.decide(entries, mode, nowMs);
    expect(fromA, label).toEqual(fromB);
    chargedEntries(entries, fromA, mode).forEach((charged, i) => {
      if (charged)
        expiresAtMs.set((entries[i] as StoreEntry).key, nowMs + (fromA[i] as StoreVerdict).resetMs + 1);
    });
  }
}

/** A MemoryStore side for `expectSameSteps`. */
export function memorySide(): DecideSide {
  const { decide, store } = memoryDecide();
  return { decide, forget: (keys) => store.reset(keys) };
}

/** The steps of a one-policy history on keys `<prefix>:{k<n>}:<policy>`. */
export function* opSteps(policy: CompiledPolicy, ops: readonly Op[], t0: number, prefix: string) {
  let now = t0;
  for (const [i, op] of ops.entries()) {
    now += op.dtMs;
    const entries: StoreEntry[] = [{ key: `${prefix}:{k${op.key}}:${policy.name}`, policy, cost: op.cost }];
    yield { entries, mode: op.mode, nowMs: now, label: `step ${i}: ${op.mode} ${op.cost} ${op.dtMs} ms` };
  }
}

/** The steps of a multi-policy history (see `entriesFor`). */
export function* multiOpSteps(
  policies: readonly CompiledPolicy[],
  ops: readonly MultiOp[],
  t0: number,
  prefix: string,
) {
  let now = t0;
  for (const [i, op] of ops.entries()) {
    now += op.dtMs;
    const entries = entriesFor(prefix, policies, op);
    const kinds = entries.map((e) => `${e.policy.name}${e.policy.shadow ? ' (shadow)' : ''}`).join(', ');
    yield { entries, mode: op.mode, nowMs: now, label: `step ${i}: ${op.mode} ${kinds}, ${op.dtMs} ms` };
  }
}
