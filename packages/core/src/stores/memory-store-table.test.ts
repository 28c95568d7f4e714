import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ALGORITHMS } from '../algorithms/index.js';
import { ALL_ALGORITHMS, policyArb, startTimeArb } from '../algorithms/testing.test-support.js';
import { wholeWaitMs } from '../algorithms/types.js';
import type { Algorithm, CompiledPolicy, StoreMode, StoreVerdict } from '../types.js';
import { MemoryStore } from './memory-store.js';

/**
 * A plain reference for MemoryStore's table: one object per key in a Map, the same
 * least-recently-used order, lazy expiry, sweep of two and eviction rule.
 */
class ReferenceStore {
  readonly slots = new Map<string, { algorithm: Algorithm; state: unknown; expiresAtMs: number }>();
  constructor(readonly maxKeys: number) {}

  decide(key: string, policy: CompiledPolicy, cost: number, mode: StoreMode, now: number): StoreVerdict {
    let state: unknown;
    const slot = this.slots.get(key);
    if (slot !== undefined) {
      this.slots.delete(key);
      if (now <= slot.expiresAtMs) {
        this.slots.set(key, slot);
        if (slot.algorithm === policy.algorithm) state = slot.state;
      }
    }
    const e = ALGORITHMS[policy.algorithm].evaluate(state, now, { ...policy, cost });
    const charge = mode === 'consume' && e.allowed;
    if (charge) {
      if (!this.slots.delete(key) && this.slots.size >= this.maxKeys) {
        this.sweep(now);
        if (this.slots.size >= this.maxKeys) this.slots.delete(this.slots.keys().next().value as string);
      }
      const expiresAtMs = now + Math.ceil(e.chargedResetMs) + 1;
      this.slots.set(key, { algorithm: policy.algorithm, state: e.charge(), expiresAtMs });
      this.sweep(now);
    }
    return {
      allowed: e.allowed,
      remaining: charge ? e.chargedRemaining : e.remaining,
      resetMs: Math.ceil(charge ? e.chargedResetMs : e.resetMs),
      retryAfterMs: wholeWaitMs(e.retryAfterMs),
    };
  }

  sweep(now: number): void {
    for (let i = 0; i < 2; i++) {
      const first = this.slots.entries().next();
      if (first.done || now <= first.value[1].expiresAtMs) return;
      this.slots.delete(first.value[0]);
    }
  }
}

/** A compiled policy of `algorithm` with a one-minute window, `limit` units and `intervalMs` per unit. */
async function fixedPolicy(algorithm: Algorithm, limit: number, intervalMs: number): Promise<CompiledPolicy> {
  const sampled = (await fc.sample(policyArb(algorithm), 1))[0] as CompiledPolicy;
  return { ...sampled, limit, windowMs: 60_000, intervalMs };
}

describe('MemoryStore state table', () => {
  it('decides like a plain map of objects under eviction, expiry, slot reuse and algorithm changes', async () => {
    const policiesArb = fc.tuple(
      ...ALL_ALGORITHMS.map((algorithm) => policyArb(algorithm).map((p) => ({ ...p, name: algorithm }))),
    );
    const opArb = fc.record({
      key: fc.integer({ min: 0, max: 9 }),
      policy: fc.integer({ min: 0, max: ALL_ALGORITHMS.length - 1 }),
      cost: fc.integer({ min: 1, max: 4 }),
      dtMs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 3000 }), fc.constant(1e7)),
      mode: fc.constantFrom<StoreMode>('consume', 'consume', 'peek'),
    });
    await fc.assert(
      fc.asyncProperty(
        policiesArb,
        fc.array(opArb, { minLength: 1, maxLength: 80, size: '+1' }),
        fc.integer({ min: 1, max: 5 }),
        startTimeArb,
        async (policies, ops, maxKeys, t0) => {
          let now = t0;
          const store = new MemoryStore({ clock: () => now, maxKeys });
          const reference = new ReferenceStore(maxKeys);
          for (const op of ops) {
            now += op.dtMs;
            const policy = policies[op.policy] as CompiledPolicy;
            const key = `k${op.key}`; // the same key under several algorithms on purpose
            const [v] = await store.decide([{ key, policy, cost: op.cost }], op.mode);
            expect(v).toEqual(reference.decide(key, policy, op.cost, op.mode, now));
            expect(store.size).toBe(reference.slots.size);
            expect(store.size).toBeLessThanOrEqual(maxKeys);
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('evicts the least recently used key when the same key is checked several times in a row', async () => {
    let now = 1_764_400_000_000;
    const store = new MemoryStore({ clock: () => now, maxKeys: 2 });
    const policy = await fixedPolicy('fixed-window', 10, 6_000);
    const consume = (key: string) => store.decide([{ key, policy, cost: 1 }], 'consume');
    await consume('a');
    now += 1;
    await consume('b');
    // 'a' becomes the most recently used, then stays so while it is checked again.
    for (let i = 0; i < 3; i++) {
      now += 1;
      await consume('a');
    }
    now += 1;
    await consume('c'); // full: 'b' is the least recently used
    const [a] = await store.decide([{ key: 'a', policy, cost: 1 }], 'peek');
    const [b] = await store.decide([{ key: 'b', policy, cost: 1 }], 'peek');
    expect(a?.remaining).toBe(6);
    expect(b?.remaining).toBe(10);
    expect(store.size).toBe(2);
  });

  it('keeps every state across growth of the table', async () => {
    const now = 1_764_400_000_000;
    const store = new MemoryStore({ clock: () => now, maxKeys: 10_000 });
    const policy = await fixedPolicy('token-bucket', 5, 12_000);
    for (let i = 0; i < 5000; i++)
      await store.decide([{ key: `g${i}`, policy, cost: 1 + (i % 5) }], 'consume');
    for (let i = 0; i < 5000; i++) {
      const [v] = await store.decide([{ key: `g${i}`, policy, cost: 1 }], 'peek');
      expect(v?.remaining).toBe(5 - (1 + (i % 5)));
    }
  });
});
