/**
 * Concurrency slots in the decide script (lua/concurrency.lua) and the slots script (lua/slots.lua),
 * on a real redis-server, through RedisStore with an explicit clock (and Redis TIME for the TTL).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { useRedis } from '../../../../test/support/redis-fixture.js';
import { definePolicy } from '../policy/define-policy.js';
import { RedisStore } from '../stores/redis-store.js';
import type { CompiledPolicy, StoreEntry } from '../types.js';
import { DECIDE_SCRIPT, encodeScriptArgs, encodeScriptKeys } from './script.js';
import { SLOTS_SCRIPT } from './slots-script.js';

const fixture = useRedis();
let now = 1_764_400_000_000.25;
let store: RedisStore;
let run = 0;
/** A key of its own for each test. */
const fresh = (): string => `cc${++run}:{id${run}}:in-flight`;

beforeAll(() => {
  store = new RedisStore({ client: fixture.client, clock: () => now, maxBatch: 1 });
});

const LEASE_MS = 1000;
const slots = (limit: number, extra: Partial<Parameters<typeof definePolicy>[0]> = {}): CompiledPolicy =>
  definePolicy({ name: 'in-flight', algorithm: 'concurrency', limit, leaseMs: LEASE_MS, ...extra });
const take = (key: string, policy: CompiledPolicy, slotId: string): StoreEntry => ({
  key,
  policy,
  cost: 1,
  slotId,
});
/** The sorted set at `key`: [member, score] pairs, lowest score first. */
async function members(key: string): Promise<[string, number][]> {
  const flat = await fixture.admin.zrange(key, 0, -1, 'WITHSCORES');
  const out: [string, number][] = [];
  for (let i = 0; i < flat.length; i += 2) out.push([flat[i] as string, Number(flat[i + 1])]);
  return out;
}

describe('a concurrency entry in the decide script', () => {
  it('admits while fewer than limit slots are live, each slot a member scored by its expiry', async () => {
    const key = fresh();
    const p = slots(2);
    const t0 = now;
    expect(await store.decide([take(key, p, 'a')], 'consume')).toEqual([
      { allowed: true, remaining: 1, resetMs: LEASE_MS, retryAfterMs: 0 },
    ]);
    now += 250;
    expect(await store.decide([take(key, p, 'b')], 'consume')).toEqual([
      { allowed: true, remaining: 0, resetMs: LEASE_MS, retryAfterMs: 0 },
    ]);
    now += 100;
    // Denied: retryAfterMs = until the earliest slot runs out (a), resetMs = until the last (b).
    expect(await store.decide([take(key, p, 'c')], 'consume')).toEqual([
      { allowed: false, remaining: 0, resetMs: 900, retryAfterMs: 650 },
    ]);
    expect(await members(key)).toEqual([
      ['a', t0 + LEASE_MS],
      ['b', t0 + 250 + LEASE_MS],
    ]);
  });

  it('removes and counts the slots whose lease ran out while the key lived on; peek removes nothing', async () => {
    const key = fresh();
    const p = slots(2);
    await store.decide([take(key, p, 'a')], 'consume');
    now += 600;
    await store.decide([take(key, p, 'b')], 'consume');
    now += 500; // a ran out 100 ms ago, b is live
    const before = await members(key);
    expect(await store.decide([{ key, policy: p, cost: 1 }], 'peek')).toEqual([
      { allowed: true, remaining: 1, resetMs: 500, retryAfterMs: 0 },
    ]);
    expect(await members(key)).toEqual(before);
    expect(await store.decide([take(key, p, 'c')], 'consume')).toEqual([
      { allowed: true, remaining: 0, resetMs: LEASE_MS, retryAfterMs: 0, reclaimedSlots: 1 },
    ]);
    expect((await members(key)).map(([m]) => m)).toEqual(['b', 'c']);
    // Counted once: the next check finds nothing more to reclaim.
    expect((await store.decide([take(key, p, 'd')], 'consume'))[0]).not.toHaveProperty('reclaimedSlots');
  });

  it('counts nothing as reclaimed on a key whose every slot ran out more than 1 ms ago (gone by its TTL)', async () => {
    const key = fresh();
    const p = slots(1);
    await store.decide([take(key, p, 'a')], 'consume');
    now += LEASE_MS + 2;
    expect(await store.decide([take(key, p, 'b')], 'consume')).toEqual([
      { allowed: true, remaining: 0, resetMs: LEASE_MS, retryAfterMs: 0 },
    ]);
    expect((await members(key)).map(([m]) => m)).toEqual(['b']);
  });

  it('keeps the key no longer than its latest slot (Redis TIME)', async () => {
    const key = fresh();
    const timeStore = new RedisStore({ client: fixture.client, maxBatch: 1 });
    const p = definePolicy({ name: 'in-flight', algorithm: 'concurrency', limit: 3, leaseMs: '5s' });
    await timeStore.decide([take(key, p, 'a')], 'consume');
    const ttl = await fixture.admin.pttl(key);
    expect(ttl).toBeGreaterThan(4900);
    expect(ttl).toBeLessThanOrEqual(5001);
    expect(await timeStore.renewSlots([{ key, policy: p, slotId: 'a' }])).toEqual([true]);
    expect(await fixture.admin.pttl(key)).toBeGreaterThan(4900);
    expect(await timeStore.releaseSlots([{ key, policy: p, slotId: 'a' }])).toEqual([true]);
    expect(await fixture.admin.exists(key)).toBe(0);
  });

  it('is all or nothing with a rate entry in one call, both ways', async () => {
    const key = fresh();
    const rateKey = key.replace('in-flight', 'rate');
    const p = slots(1);
    const rate = definePolicy({ name: 'rate', algorithm: 'fixed-window', limit: 1, window: '1h' });
    const both = (slotId: string): StoreEntry[] => [
      take(key, p, slotId),
      { key: rateKey, policy: rate, cost: 1 },
    ];
    expect((await store.decide(both('a'), 'consume')).map((v) => v.allowed)).toEqual([true, true]);
    await store.releaseSlots([{ key, policy: p, slotId: 'a' }]);
    // The rate denies: no slot is taken.
    expect((await store.decide(both('b'), 'consume')).map((v) => v.allowed)).toEqual([true, false]);
    expect(await fixture.admin.exists(key)).toBe(0);
    // The slot denies: no rate unit is charged.
    const other = fresh();
    const otherRate = other.replace('in-flight', 'rate');
    await store.decide([take(other, p, 'x')], 'consume');
    const check = [take(other, p, 'y'), { key: otherRate, policy: rate, cost: 1 }];
    expect((await store.decide(check, 'consume')).map((v) => v.allowed)).toEqual([false, true]);
    expect(await fixture.admin.exists(otherRate)).toBe(0);
    expect((await members(other)).map(([m]) => m)).toEqual(['x']);
  });

  it('as a shadow policy never blocks the enforced entries, and takes a slot only when every entry allows', async () => {
    const key = fresh();
    const rateKey = key.replace('in-flight', 'rate');
    const shadow = slots(1, { shadow: true });
    const rate = definePolicy({ name: 'rate', algorithm: 'fixed-window', limit: 5, window: '1h' });
    await store.decide([take(key, shadow, 'a')], 'consume');
    const verdicts = await store.decide(
      [take(key, shadow, 'b'), { key: rateKey, policy: rate, cost: 1 }],
      'consume',
    );
    expect(verdicts.map((v) => [v.allowed, v.remaining])).toEqual([
      [false, 0],
      [true, 4],
    ]);
    expect((await members(key)).map(([m]) => m)).toEqual(['a']);
  });

  it('replays an idempotent request with a slot of its own, or denied when none is free', async () => {
    const key = fresh();
    const p = slots(2);
    const rate = definePolicy({ name: 'rate', algorithm: 'fixed-window', limit: 10, window: '1m' });
    const rateKey = key.replace('in-flight', 'rate');
    const options = { requestKey: key.replace('in-flight', 'req'), requestTtlMs: 60_000 };
    const entries = (slotId: string): StoreEntry[] => [
      take(key, p, slotId),
      { key: rateKey, policy: rate, cost: 1 },
    ];
    const first = await store.decide(entries('a'), 'consume', options);
    expect(first.map((v) => v.allowed)).toEqual([true, true]);
    // The replay takes its own slot (b) and is told so; the rate policy is not charged again.
    expect(await store.decide(entries('b'), 'consume', options)).toEqual([
      { allowed: true, remaining: 0, resetMs: LEASE_MS, retryAfterMs: 0 },
      first[1],
    ]);
    expect((await members(key)).map(([m]) => m)).toEqual(['a', 'b']);
    // Both slots held: a replay is denied (the rate policy's recorded verdict as it was), taking nothing.
    now += 100;
    expect(await store.decide(entries('c'), 'consume', options)).toEqual([
      { allowed: false, remaining: 0, resetMs: LEASE_MS - 100, retryAfterMs: LEASE_MS - 100 },
      first[1],
    ]);
    expect((await members(key)).map(([m]) => m)).toEqual(['a', 'b']);
    expect((await store.decide([{ key: rateKey, policy: rate, cost: 1 }], 'peek'))[0]?.remaining).toBe(9);
  });

  it('replays a decision whose shadow policy denied with a slot of its own: a shadow denial blocks no enforced entry', async () => {
    const key = fresh();
    const p = slots(2);
    const rate = definePolicy({
      name: 'rate',
      algorithm: 'fixed-window',
      limit: 1,
      window: '1h',
      shadow: true,
    });
    const rateKey = key.replace('in-flight', 'rate');
    await store.decide([{ key: rateKey, policy: rate, cost: 1 }], 'consume');
    const options = { requestKey: key.replace('in-flight', 'req'), requestTtlMs: 60_000 };
    const entries = (slotId: string): StoreEntry[] => [
      take(key, p, slotId),
      { key: rateKey, policy: rate, cost: 1 },
    ];
    const first = await store.decide(entries('a'), 'consume', options);
    expect(first.map((v) => v.allowed)).toEqual([true, false]);
    // The recorded decision charged its enforced entry (the slot): the replay takes its own (b).
    expect(await store.decide(entries('b'), 'consume', options)).toEqual([
      { allowed: true, remaining: 0, resetMs: LEASE_MS, retryAfterMs: 0 },
      first[1],
    ]);
    expect((await members(key)).map(([m]) => m)).toEqual(['a', 'b']);
  });

  it("reads another algorithm's state at the key as no slots and replaces it on a charge", async () => {
    const key = fresh();
    await fixture.admin.set(key, '5|1764400000000');
    expect((await store.decide([take(key, slots(1), 'a')], 'consume'))[0]?.allowed).toBe(true);
    expect((await members(key)).map(([m]) => m)).toEqual(['a']);
  });

  it('settles nothing: a slot is not a number of units', async () => {
    const key = fresh();
    const p = slots(1);
    await store.decide([take(key, p, 'a')], 'consume');
    const settle = { key, policy: p, reservedUnits: 1, actualUnits: 0, reservedAgoMs: 0 };
    expect(await store.settle([settle])).toEqual([false]);
    expect((await members(key)).map(([m]) => m)).toEqual(['a']);
  });

  it('refuses a consuming entry without its slot, a cost other than one slot, and the short form', async () => {
    const key = fresh();
    const p = slots(2);
    await expect(store.decide([{ key, policy: p, cost: 1 }], 'consume')).rejects.toThrow(/"slotId"/);
    await expect(store.decide([{ key, policy: p, cost: 2, slotId: 'a' }], 'consume')).rejects.toThrow(
      /costs 1 slot, got cost 2/,
    );
    const entries = [take(key, p, 'a')];
    const args = encodeScriptArgs(entries, 'consume', now);
    const raw = (edit: (a: string) => string) =>
      fixture.admin.eval(DECIDE_SCRIPT.source, 1, ...encodeScriptKeys(entries), ...args.map(edit));
    await expect(raw((a) => (a === '1@a' ? '2@a' : a))).rejects.toThrow(/costs 1@<slotId>/);
    await expect(raw((a) => (a === '1@a' ? '1' : a))).rejects.toThrow(/costs 1@<slotId>/);
    const short = [...args.slice(0, 7), '1'];
    await expect(fixture.admin.eval(DECIDE_SCRIPT.source, 1, key, ...short)).rejects.toThrow(/full form/);
    expect(await fixture.admin.exists(key)).toBe(0);
  });
});

describe('the slots script', () => {
  it('carries the SHA1 that SCRIPT LOAD returns', async () => {
    expect(await fixture.admin.script('LOAD', SLOTS_SCRIPT.source)).toBe(SLOTS_SCRIPT.sha1);
  });

  it('loads itself again after SCRIPT FLUSH (EVALSHA, then EVAL on NOSCRIPT)', async () => {
    const key = fresh();
    const p = slots(1);
    await store.decide([take(key, p, 'a')], 'consume');
    await fixture.admin.script('FLUSH');
    expect(await store.renewSlots([{ key, policy: p, slotId: 'a' }])).toEqual([true]);
    await fixture.admin.script('FLUSH');
    expect(await store.releaseSlots([{ key, policy: p, slotId: 'a' }])).toEqual([true]);
  });

  it('releases a held slot once (idempotent), and a released slot frees its place at once', async () => {
    const key = fresh();
    const p = slots(1);
    await store.decide([take(key, p, 'a')], 'consume');
    expect((await store.decide([take(key, p, 'b')], 'consume'))[0]?.allowed).toBe(false);
    const a = { key, policy: p, slotId: 'a' };
    expect(await store.releaseSlots([a])).toEqual([true]);
    expect(await store.releaseSlots([a])).toEqual([false]);
    expect(await store.releaseSlots([{ ...a, slotId: 'never' }])).toEqual([false]);
    expect((await store.decide([take(key, p, 'b')], 'consume'))[0]?.allowed).toBe(true);
  });

  it('renews a held slot past its lease; a slot that ran out is lost and never taken again', async () => {
    const key = fresh();
    const p = slots(2);
    await store.decide([take(key, p, 'a')], 'consume');
    await store.decide([take(key, p, 'b')], 'consume');
    const a = { key, policy: p, slotId: 'a' };
    const b = { key, policy: p, slotId: 'b' };
    now += 800;
    expect(await store.renewSlots([a])).toEqual([true]);
    now += 700; // b ran out 500 ms ago, a renewed until now + 300
    expect(await store.renewSlots([b, a])).toEqual([false, true]);
    expect(await members(key)).toEqual([
      ['b', now - 700 - 800 + LEASE_MS],
      ['a', now + LEASE_MS],
    ]);
    // b is reclaimed by the next check, and a renewal after that does not bring it back.
    expect((await store.decide([take(key, p, 'c')], 'consume'))[0]).toMatchObject({ reclaimedSlots: 1 });
    expect(await store.renewSlots([b])).toEqual([false]);
    expect((await members(key)).map(([m]) => m)).toEqual(['a', 'c']);
  });

  it('answers one flag per slot across keys of several identities (one call per hash tag)', async () => {
    const p = slots(1);
    const one = fresh();
    const two = fresh();
    await store.decide([take(one, p, 'a')], 'consume');
    const flags = await store.releaseSlots([
      { key: two, policy: p, slotId: 'a' },
      { key: one, policy: p, slotId: 'a' },
      { key: one, policy: p, slotId: 'a' },
    ]);
    expect(flags).toEqual([false, true, false]);
  });

  it('refuses a slot of another algorithm before calling Redis', async () => {
    const rate = definePolicy({ name: 'rate', limit: 1, window: '1s' });
    await expect(store.releaseSlots([{ key: fresh(), policy: rate, slotId: 'a' }])).rejects.toThrow(
      /concurrency policy/,
    );
  });
});
