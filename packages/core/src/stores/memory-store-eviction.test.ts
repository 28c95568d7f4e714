import { describe, expect, it } from 'vitest';
import { definePolicy } from '../policy/define-policy.js';
import type { StoreEntry } from '../types.js';
import { countMapIterations } from './map-iterations.test-support.js';
import { MemoryStore } from './memory-store.js';

const policy = definePolicy({ name: 'p', burst: 5, rate: '1/s' });
const entry = (key: string): StoreEntry[] => [{ key, policy, cost: 1 }];

/** Work per check while the store evicts: slots its recency list visited, and Map iterations. */
function workPerCheck(store: MemoryStore, keys: readonly string[]): { slots: number; mapIterations: number } {
  const before = store.visitedSlots;
  const mapIterations = countMapIterations(() => {
    for (const key of keys) store.decideSync(entry(key), 'consume');
  });
  return { slots: (store.visitedSlots - before) / keys.length, mapIterations };
}

describe('MemoryStore eviction', () => {
  it('does the same small work per check however many keys were evicted before', () => {
    const now = { t: 1_700_000_000_000 };
    const maxKeys = 2000;
    const store = new MemoryStore({ clock: () => now.t, maxKeys });
    const keys = (round: number) => Array.from({ length: maxKeys }, (_, i) => `k:${round}:${i}`);
    // Every key stays live (burst 5 at 1/s: its state lives 1 s), so every new key evicts one.
    const first = workPerCheck(store, keys(0));
    const early = workPerCheck(store, keys(1));
    for (let round = 2; round < 20; round++) workPerCheck(store, keys(round));
    const late = workPerCheck(store, keys(20));
    // Finding the oldest key with map.keys().next() is work that grows with the deletes in
    // front of it: no Map is iterated on the check path.
    expect(early.mapIterations + late.mapIterations).toBe(0);
    expect(first.slots).toBeGreaterThan(0);
    expect(early.slots).toBeLessThanOrEqual(4);
    expect(late.slots).toBe(early.slots);
    expect(store.size).toBe(maxKeys);
  });

  it('visits the same slots per check when expired keys are swept', () => {
    const now = { t: 1_700_000_000_000 };
    const store = new MemoryStore({ clock: () => now.t, maxKeys: 1000 });
    const rounds: number[] = [];
    for (let round = 0; round < 10; round++) {
      const keys = Array.from({ length: 1000 }, (_, i) => `r${round}:${i}`);
      const work = workPerCheck(store, keys);
      expect(work.mapIterations).toBe(0);
      rounds.push(work.slots);
      now.t += 10_000; // every key of this round is expired for the next
    }
    for (const slots of rounds.slice(1)) expect(slots).toBeLessThanOrEqual(6);
  });

  it('counts the keys it evicts while their state is live, not the expired ones', () => {
    const now = { t: 1_700_000_000_000 };
    const store = new MemoryStore({ clock: () => now.t, maxKeys: 3 });
    for (const key of ['a', 'b', 'c']) store.decideSync(entry(key), 'consume');
    expect(store.liveEvictions).toBe(0);
    store.decideSync(entry('d'), 'consume');
    expect(store.liveEvictions).toBe(1);
    // 'a' was the least recently used: its usage is forgotten, it starts full again.
    expect(store.decideSync(entry('a'), 'peek')[0]).toMatchObject({ remaining: 5 });
    now.t += 10_000;
    for (const key of ['e', 'f', 'g']) store.decideSync(entry(key), 'consume');
    expect(store.liveEvictions).toBe(1);
  });

  it('keeps request records within maxKeys without iterating a Map', () => {
    const now = { t: 1_700_000_000_000 };
    const store = new MemoryStore({ clock: () => now.t, maxKeys: 100 });
    const iterations = countMapIterations(() => {
      for (let i = 0; i < 1000; i++) {
        store.decideSync(entry(`k${i % 10}`), 'consume', { requestKey: `r${i}`, requestTtlMs: 60_000 });
      }
    });
    expect(iterations).toBe(0);
    // Later, every key has refilled: the newest record still replays its denial, the oldest
    // was evicted (100 records at most) and is decided afresh.
    now.t += 10_000;
    const replay = store.decideSync(entry('k9'), 'consume', { requestKey: 'r999', requestTtlMs: 60_000 });
    const again = store.decideSync(entry('k0'), 'consume', { requestKey: 'r0', requestTtlMs: 60_000 });
    expect(replay[0]?.allowed).toBe(false);
    expect(again[0]?.allowed).toBe(true);
  });
});
