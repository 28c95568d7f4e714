/**
 * Concurrency slots on both stores: MemoryStore and RedisStore (a real redis-server, the script
 * given the same explicit clock) answer every check, release and renew of the same history alike,
 * and each keeps the slot invariants against a model of the slots held, frozen and moving clocks.
 */

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { useRedis } from '../../../../test/support/redis-fixture.js';
import { LocalFallback } from '../limiter/local-fallback.js';
import { StoreUnavailable } from '../limiter/store-answer.js';
import { definePolicy } from '../policy/define-policy.js';
import type { CompiledPolicy, SlotRef, Store, StoreEntry } from '../types.js';
import { MemoryStore } from './memory-store.js';
import { RedisStore } from './redis-store.js';

const fixture = useRedis();
let now = 0;
const clock = (): number => now;
let run = 0;

/**
 * One step of a history: a check (taking a new slot), a peek, a check of an idempotent request
 * (`request`: one of three ids; a retry replays it), a release, a renew, or time passing.
 */
type Op =
  | { readonly kind: 'take' | 'peek'; readonly who: number }
  | { readonly kind: 'request'; readonly who: number; readonly id: number }
  | { readonly kind: 'release' | 'renew'; readonly pick: number }
  | { readonly kind: 'tick'; readonly ms: number }
  | { readonly kind: 'edge'; readonly pick: number; readonly deltaMs: number };

const opArb = (moving: boolean): fc.Arbitrary<Op> =>
  fc.oneof(
    { weight: 4, arbitrary: fc.record({ kind: fc.constant('take' as const), who: fc.nat(1) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('peek' as const), who: fc.nat(1) }) },
    {
      weight: 2,
      arbitrary: fc.record({ kind: fc.constant('request' as const), who: fc.nat(1), id: fc.nat(2) }),
    },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('release' as const), pick: fc.nat(30) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('renew' as const), pick: fc.nat(30) }) },
    {
      weight: moving ? 3 : 0,
      // Steps of a fraction of a ms up to past a lease, and sometimes exactly to an expiry's edge.
      arbitrary: fc.record({
        kind: fc.constant('tick' as const),
        ms: fc.oneof(fc.integer({ min: 0, max: 1500 }), fc.double({ min: 0, max: 5, noNaN: true })),
      }),
    },
    {
      weight: moving ? 2 : 0,
      // To the edge of a slot's expiry (and of its key's 1 ms of grace), never backwards.
      arbitrary: fc.record({
        kind: fc.constant('edge' as const),
        pick: fc.nat(30),
        deltaMs: fc.constantFrom(-0.001, 0, 0.001, 1, 1.001, 2),
      }),
    },
  );

const caseArb = (moving: boolean) =>
  fc.record({
    limit: fc.integer({ min: 1, max: 3 }),
    leaseMs: fc.integer({ min: 100, max: 1000 }),
    start: fc.double({ min: 1.7e12, max: 1.8e12, noNaN: true }),
    ops: fc.array(opArb(moving), { minLength: 1, maxLength: 40 }),
  });

/** What one step answered: verdicts or flags, as plain data to compare. */
type Answer = unknown;

/** Runs `ops` on `store` from `start`, checking the slot invariants against a model; returns every answer. */
async function replay(
  store: Store,
  policy: CompiledPolicy,
  start: number,
  ops: readonly Op[],
): Promise<Answer[]> {
  const id = ++run;
  const keys = [`c${id}:{a${id}}:in-flight`, `c${id}:{b${id}}:in-flight`];
  now = start;
  // The model: every slot taken so far, its key and expiry (undefined once released).
  const taken: { ref: SlotRef; expiry: number | undefined }[] = [];
  const liveOf = (key: string) => taken.filter((t) => t.ref.key === key && (t.expiry ?? -1) > now).length;
  const answers: Answer[] = [];
  // The model's request records: whether the recorded check was admitted, and until when it is kept.
  const RECORD_TTL_MS = 5000;
  const records = new Map<string, { allowed: boolean; expiresAtMs: number }>();
  for (const op of ops) {
    if (op.kind === 'tick') {
      now += op.ms;
      continue;
    }
    if (op.kind === 'edge') {
      const expiry = taken[op.pick % Math.max(1, taken.length)]?.expiry;
      if (expiry !== undefined) now = Math.max(now, expiry + op.deltaMs);
      continue;
    }
    if (op.kind === 'request') {
      const key = keys[op.who] as string;
      const requestKey = `${key.slice(0, key.indexOf('}') + 1)}:req${op.id}`;
      const live = liveOf(key);
      const slotId = `s${taken.length}`;
      const entry: StoreEntry = { key, policy, cost: 1, slotId };
      const [verdict] = await store.decide([entry], 'consume', { requestKey, requestTtlMs: RECORD_TTL_MS });
      answers.push(verdict);
      const record = records.get(requestKey);
      const replayed = record !== undefined && now <= record.expiresAtMs;
      // A replay of a denial stays denied; a first check, or the replay of an admission, is
      // admitted exactly when a slot is free, and then holds one of its own.
      const charged = replayed && !record.allowed ? false : live < policy.limit;
      expect(verdict?.allowed).toBe(charged);
      if (charged) taken.push({ ref: { key, policy, slotId }, expiry: now + policy.windowMs });
      if (!replayed) records.set(requestKey, { allowed: charged, expiresAtMs: now + RECORD_TTL_MS });
      continue;
    }
    if (op.kind === 'take' || op.kind === 'peek') {
      const key = keys[op.who] as string;
      const live = liveOf(key);
      const slotId = `s${taken.length}`;
      const entry: StoreEntry = { key, policy, cost: 1, ...(op.kind === 'take' && { slotId }) };
      const [verdict] = await store.decide([entry], op.kind === 'take' ? 'consume' : 'peek');
      answers.push(verdict);
      // Never more than limit live; a released or expired slot is never counted.
      expect(live).toBeLessThanOrEqual(policy.limit);
      expect(verdict?.allowed).toBe(live < policy.limit);
      const charged = op.kind === 'take' && live < policy.limit;
      expect(verdict?.remaining).toBe(policy.limit - live - (charged ? 1 : 0));
      if (charged) taken.push({ ref: { key, policy, slotId }, expiry: now + policy.windowMs });
      continue;
    }
    if (op.kind !== 'release' && op.kind !== 'renew') continue;
    const held = taken[op.pick % Math.max(1, taken.length)];
    if (held === undefined) continue;
    const wasLive = (held.expiry ?? -1) > now;
    const [flag] =
      op.kind === 'release'
        ? ((await store.releaseSlots?.([held.ref])) ?? [])
        : ((await store.renewSlots?.([held.ref])) ?? []);
    answers.push(flag);
    // Held (live) exactly where the model holds it; a lost slot is never taken again.
    expect(flag).toBe(wasLive);
    if (op.kind === 'release') held.expiry = undefined;
    else if (wasLive) held.expiry = now + policy.windowMs;
  }
  return answers;
}

const policyOf = (limit: number, leaseMs: number) =>
  definePolicy({ name: 'in-flight', algorithm: 'concurrency', limit, leaseMs });

describe.each([
  ['a frozen clock', false],
  ['a moving clock', true],
])('concurrency slots under %s', (_, moving) => {
  it('MemoryStore keeps the slot invariants', async () => {
    await fc.assert(
      fc.asyncProperty(caseArb(moving), async ({ limit, leaseMs, start, ops }) => {
        await replay(new MemoryStore({ clock }), policyOf(limit, leaseMs), start, ops);
      }),
      { numRuns: 200 },
    );
  });

  it('RedisStore keeps them too, and answers every step exactly as MemoryStore', async () => {
    const redisStore = new RedisStore({ client: fixture.client, clock, maxBatch: 1 });
    await fc.assert(
      fc.asyncProperty(caseArb(moving), async ({ limit, leaseMs, start, ops }) => {
        const policy = policyOf(limit, leaseMs);
        const memory = await replay(new MemoryStore({ clock }), policy, start, ops);
        expect(await replay(redisStore, policy, start, ops)).toEqual(memory);
      }),
      { numRuns: 40 },
    );
  });
});

describe('RedisStore slots in a batch', () => {
  it('decides checks issued together in one script call, in order, as MemoryStore decides them one by one', async () => {
    const store = new RedisStore({ client: fixture.client, clock });
    const memory = new MemoryStore({ clock });
    const policy = policyOf(3, 1000);
    const rate = definePolicy({ name: 'rate', algorithm: 'gcra', burst: 5, rate: '1/h' });
    now = 1_800_000_000_000;
    const checks = Array.from({ length: 8 }, (_, i): StoreEntry[] => {
      const who = `{b${run}-${i % 2}}`;
      const slot: StoreEntry = { key: `${who}:in-flight`, policy, cost: 1, slotId: `s${i}` };
      return i % 3 === 0 ? [slot, { key: `${who}:rate`, policy: rate, cost: 1 }] : [slot];
    });
    run++;
    const calls = store.scriptStats.calls;
    const batched = await Promise.all(checks.map((entries) => store.decide(entries, 'consume')));
    expect(store.scriptStats.calls - calls).toBe(1);
    expect(batched).toEqual(checks.map((entries) => memory.decideSync(entries, 'consume')));
    expect(batched.filter((v) => v[0]?.allowed)).toHaveLength(6);
  });
});

describe('MemoryStore slots', () => {
  it('reclaims an expired slot while the key lives on, as the script does', () => {
    const store = new MemoryStore({ clock });
    const policy = policyOf(2, 1000);
    const key = 'm:{x}:in-flight';
    now = 1_000_000;
    store.decideSync([{ key, policy, cost: 1, slotId: 'a' }], 'consume');
    now += 600;
    store.decideSync([{ key, policy, cost: 1, slotId: 'b' }], 'consume');
    now += 500;
    expect(store.decideSync([{ key, policy, cost: 1 }], 'peek')[0]).not.toHaveProperty('reclaimedSlots');
    expect(store.decideSync([{ key, policy, cost: 1, slotId: 'c' }], 'consume')[0]).toMatchObject({
      allowed: true,
      reclaimedSlots: 1,
    });
    expect(store.releaseSlotsSync([{ key, policy, slotId: 'a' }])).toEqual([false]);
    expect(store.renewSlotsSync([{ key, policy, slotId: 'b' }])).toEqual([true]);
    expect(store.settleSync([{ key, policy, reservedUnits: 1, actualUnits: 0, reservedAgoMs: 0 }])).toEqual([
      false,
    ]);
  });

  it('keeps its key bounds: a key whose slots all ran out goes, and maxKeys holds', () => {
    const store = new MemoryStore({ clock, maxKeys: 2 });
    const policy = policyOf(1, 100);
    now = 5_000_000;
    for (let i = 0; i < 5; i++) store.decideSync([{ key: `k${i}`, policy, cost: 1, slotId: 's' }], 'consume');
    expect(store.size).toBe(2);
    now += 200;
    store.decideSync([{ key: 'k4', policy, cost: 1, slotId: 't' }], 'consume');
    expect(store.releaseSlotsSync([{ key: 'k4', policy, slotId: 't' }])).toEqual([true]);
    expect(store.size).toBeLessThanOrEqual(1);
  });
});

describe("failMode 'local'", () => {
  it('decides slots in the in-process fallback while the store cannot, and frees them there', () => {
    const fallback = new LocalFallback(clock, 100);
    const policy = definePolicy({ name: 'in-flight', algorithm: 'concurrency', limit: 2, failMode: 'local' });
    const key = 'f:{x}:in-flight';
    now = 2_000_000;
    const check = (slotId: string) =>
      fallback.decide([{ key, policy, cost: 1, slotId }], 'consume', new StoreUnavailable('error'))
        .localVerdicts?.[0];
    expect(check('a')).toMatchObject({ allowed: true, remaining: 1 });
    expect(check('b')).toMatchObject({ allowed: true, remaining: 0 });
    expect(check('c')).toMatchObject({ allowed: false, retryAfterMs: 30_000 });
    expect(fallback.memory?.releaseSlotsSync([{ key, policy, slotId: 'a' }])).toEqual([true]);
    expect(check('c')).toMatchObject({ allowed: true, remaining: 0 });
  });
});
