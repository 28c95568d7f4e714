import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it, vi } from 'vitest';
import { makePolicy } from '../algorithms/testing.test-support.js';
import type { StoreEntry } from '../types.js';
import { MemoryStore } from './memory-store.js';

const T0 = 1_764_400_000_000;

/** A GC handle for measuring heap (the flag can be set at run time; a new context sees it). */
function gcHandle(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

describe('MemoryStore', () => {
  it('is a Store of kind "memory" that works with the default clock', async () => {
    const store = new MemoryStore();
    expect(store.kind).toBe('memory');
    const policy = makePolicy('token-bucket', 2, 60_000);
    const [v] = await store.decide([{ key: 'a', policy, cost: 1 }], 'consume');
    expect(v).toMatchObject({ allowed: true, remaining: 1 });
  });

  it('rejects bad options with the option and the value in the message', () => {
    for (const maxKeys of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => new MemoryStore({ maxKeys })).toThrow(
        `MemoryStore: "maxKeys" must be a positive integer, got ${maxKeys}`,
      );
    }
    expect(() => new MemoryStore({ clock: 5 as unknown as () => number })).toThrow(
      /"clock" must be a function/,
    );
  });

  it('peek writes nothing; reset forgets a key', async () => {
    let now = T0;
    const store = new MemoryStore({ clock: () => now });
    const policy = makePolicy('fixed-window', 3, 1000);
    const entry: StoreEntry = { key: 'k', policy, cost: 2 };
    await store.decide([entry], 'peek');
    expect(store.size).toBe(0);
    expect((await store.decide([entry], 'consume'))[0]?.remaining).toBe(1);
    expect(store.size).toBe(1);
    await store.reset(['k', 'unknown']);
    expect(store.size).toBe(0);
    now += 1;
    expect((await store.decide([entry], 'peek'))[0]?.remaining).toBe(3);
  });

  it('uses no timers, per key or per hit', async () => {
    vi.useFakeTimers();
    try {
      let now = T0;
      const store = new MemoryStore({ clock: () => now, maxKeys: 10 });
      const policy = makePolicy('gcra', 5, 1000);
      for (let i = 0; i < 100; i++) {
        now += 7;
        await store.decide([{ key: `k${i % 20}`, policy, cost: 1 }], 'consume');
      }
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it('holds at most maxKeys keys, dropping the least recently used first', async () => {
    const now = T0;
    const store = new MemoryStore({ clock: () => now, maxKeys: 3 });
    const policy = makePolicy('token-bucket', 2, 600_000);
    const use = async (key: string, cost = 1) => (await store.decide([{ key, policy, cost }], 'consume'))[0]!;
    await use('a', 2); // a is exhausted
    await use('b');
    await use('c');
    expect((await use('a')).allowed).toBe(false); // a denied: still tracked, and touched
    await use('d'); // full: drops b, the least recently used
    expect(store.size).toBe(3);
    expect((await use('a')).allowed).toBe(false); // a's usage survived
    expect((await store.decide([{ key: 'b', policy, cost: 1 }], 'peek'))[0]?.remaining).toBe(2); // b was dropped
  });

  it('drops expired keys before live ones and sweeps expired keys as it writes', async () => {
    let now = T0;
    const store = new MemoryStore({ clock: () => now, maxKeys: 1000 });
    const short = makePolicy('fixed-window', 5, 10);
    const long = makePolicy('fixed-window', 5, 3_600_000);
    for (let i = 0; i < 500; i++)
      await store.decide([{ key: `short${i}`, policy: short, cost: 1 }], 'consume');
    expect(store.size).toBe(500);
    now += 1000; // every short key expired
    for (let i = 0; i < 100; i++) await store.decide([{ key: `long${i}`, policy: long, cost: 1 }], 'consume');
    // each write sweeps up to two expired keys from the old end
    expect(store.size).toBe(500 + 100 - 200);
    for (let i = 100; i < 1200; i++)
      await store.decide([{ key: `long${i}`, policy: long, cost: 1 }], 'consume');
    expect(store.size).toBe(1000);
    // every long key written in the last 1000 writes is still there, with its usage
    const [v] = await store.decide([{ key: 'long1199', policy: long, cost: 1 }], 'peek');
    expect(v?.remaining).toBe(4);
  });

  it('holds a million keys within a bounded heap and stays bounded beyond it', () => {
    const gc = gcHandle();
    let now = T0;
    const store = new MemoryStore({ clock: () => now });
    const policy = makePolicy('fixed-window', 100, 60_000);
    const million = 1_000_000;
    gc();
    const heapBefore = process.memoryUsage().heapUsed;
    const started = performance.now();
    const cpuBefore = process.cpuUsage();
    const entries: StoreEntry[] = [{ key: '', policy, cost: 1 }];
    for (let i = 0; i < million; i++) {
      (entries as { key: string }[])[0]!.key = `sluice:{10.${i >>> 16}.${(i >>> 8) & 255}.${i & 255}}:api`;
      store.decideSync(entries, 'consume');
    }
    const fillMs = performance.now() - started;
    const fillCpuMs = process.cpuUsage(cpuBefore).user / 1000;
    gc();
    const bytesPerKey = (process.memoryUsage().heapUsed - heapBefore) / million;
    expect(store.size).toBe(million);
    now += 1; // still live (60 s window)
    for (let i = 0; i < 10_000; i++) {
      (entries as { key: string }[])[0]!.key = `sluice:{extra-${i}}:api`;
      store.decideSync(entries, 'consume');
    }
    expect(store.size).toBe(million);
    // the oldest keys made room; the newest are intact
    (entries as { key: string }[])[0]!.key = 'sluice:{10.0.0.0}:api';
    expect(store.decideSync(entries, 'peek')[0]?.remaining).toBe(100);
    (entries as { key: string }[])[0]!.key = `sluice:{extra-9999}:api`;
    expect(store.decideSync(entries, 'peek')[0]?.remaining).toBe(99);
    console.log(
      `1e6 keys: filled in ${Math.round(fillMs)} ms (${Math.round(fillCpuMs)} ms CPU), ~${Math.round(bytesPerKey)} heap bytes per key`,
    );
    expect(bytesPerKey).toBeLessThan(320);
    store.clear();
  }, 90_000);
});
