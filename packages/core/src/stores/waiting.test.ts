/**
 * Waiting for a turn (`StoreEntry.maxWaitMs`) in both stores: MemoryStore and RedisStore (the decide
 * and settle scripts on a real redis-server) at one explicit clock, same verdicts.
 */
import { describe, expect, it } from 'vitest';
import { useRedis } from '../../../../test/support/redis-fixture.js';
import { makePolicy } from '../algorithms/testing.test-support.js';
import { banKeyOf } from '../keys/build-keys.js';
import { DECIDE_SCRIPT, encodeScriptArgs } from '../redis/script.js';
import { SETTLE_SCRIPT } from '../redis/settle-script.js';
import type { CompiledPolicy, StoreEntry, StoreVerdict } from '../types.js';
import { MemoryStore } from './memory-store.js';
import { memorySettleSide, redisSettleSide, type SettleSide } from './settle.test-support.js';

const redis = useRedis();
let run = 0;
/** A key of an identity no other test used. */
const fresh = (name = 'p'): string => `w${++run}:{i${run}}:${name}`;

const SIDES = [
  ['MemoryStore', memorySettleSide],
  ['RedisStore', (): SettleSide => redisSettleSide(redis.client)],
] as const;

/** A whole ms start, on a window boundary of every policy below. */
const T0 = 1_764_400_200_000;

/** burst 2, one unit back every 100 ms. */
const bucket = (algorithm: 'token-bucket' | 'gcra' = 'token-bucket'): CompiledPolicy =>
  makePolicy(algorithm, 2, 200, algorithm);

const check = async (side: SettleSide, entries: StoreEntry[]): Promise<StoreVerdict[]> =>
  side.store.decide(entries, 'consume');

describe.each(SIDES)('%s: waiting for a turn', (_, sideOf) => {
  it.each(['token-bucket', 'gcra'] as const)(
    '%s: reserves turns in order, within maxWaitMs only',
    async (algorithm) => {
      const side = sideOf();
      side.at(T0);
      const entry: StoreEntry = { key: fresh(), policy: bucket(algorithm), cost: 1, maxWaitMs: 250 };
      expect(await check(side, [entry])).toEqual([
        { allowed: true, remaining: 1, resetMs: 100, retryAfterMs: 0 },
      ]);
      await check(side, [entry]);
      // Empty: the next two queue 100 and 200 ms ahead, charged now (the bucket in debt).
      expect(await check(side, [entry])).toEqual([
        { allowed: true, remaining: 0, resetMs: 300, retryAfterMs: 0, waitMs: 100 },
      ]);
      expect(await check(side, [entry])).toEqual([
        { allowed: true, remaining: 0, resetMs: 400, retryAfterMs: 0, waitMs: 200 },
      ]);
      // The next turn lies 300 ms ahead, beyond 250: denied at once with the real wait, nothing charged.
      const denied = { allowed: false, remaining: 0, resetMs: 400, retryAfterMs: 300 };
      expect(await check(side, [entry])).toEqual([denied]);
      expect(await check(side, [entry])).toEqual([denied]);
      // 60 ms on: the turns count down; the queue's end is 240 ms away now: a turn there.
      side.at(T0 + 60);
      expect(await check(side, [entry])).toEqual([
        { allowed: true, remaining: 0, resetMs: 440, retryAfterMs: 0, waitMs: 240 },
      ]);
    },
  );

  it('never waits in peek, nor with maxWaitMs 0, nor for a cost above the burst', async () => {
    const side = sideOf();
    side.at(T0);
    const key = fresh();
    const entry: StoreEntry = { key, policy: bucket(), cost: 2, maxWaitMs: 1000 };
    await check(side, [entry]);
    expect(await side.store.decide([entry], 'peek')).toEqual([
      { allowed: false, remaining: 0, resetMs: 200, retryAfterMs: 200 },
    ]);
    expect(await check(side, [{ ...entry, maxWaitMs: 0 }])).toEqual([
      { allowed: false, remaining: 0, resetMs: 200, retryAfterMs: 200 },
    ]);
    expect(await check(side, [{ ...entry, cost: 3 }])).toEqual([
      { allowed: false, remaining: 0, resetMs: 200, retryAfterMs: -1 },
    ]);
    // Costs above 1 wait for all their units.
    expect(await check(side, [entry])).toEqual([
      { allowed: true, remaining: 0, resetMs: 400, retryAfterMs: 0, waitMs: 200 },
    ]);
  });

  it('is all or nothing across entries: a denial elsewhere reserves nothing; each waiting entry its own turn', async () => {
    const side = sideOf();
    side.at(T0);
    const a: StoreEntry = { key: fresh('a'), policy: bucket(), cost: 2, maxWaitMs: 1000 };
    const g: StoreEntry = {
      key: fresh('g'),
      policy: makePolicy('gcra', 4, 400, 'g'),
      cost: 3,
      maxWaitMs: 1000,
    };
    const strict: StoreEntry = { key: fresh('s'), policy: makePolicy('fixed-window', 1, 1000, 's'), cost: 1 };
    await check(side, [a]);
    await check(side, [strict]);
    // a would wait 200 ms, but the fixed window denies: a is denied with its real wait, charged nothing.
    expect(await check(side, [a, strict])).toEqual([
      { allowed: false, remaining: 0, resetMs: 200, retryAfterMs: 200 },
      { allowed: false, remaining: 0, resetMs: 1000, retryAfterMs: 1000 },
    ]);
    expect((await side.store.decide([a], 'peek'))[0]).toMatchObject({ resetMs: 200, retryAfterMs: 200 });
    await check(side, [g]);
    // Both wait: each reserves its own turn (the check's turn is the later one).
    expect(await check(side, [a, g])).toEqual([
      { allowed: true, remaining: 0, resetMs: 400, retryAfterMs: 0, waitMs: 200 },
      { allowed: true, remaining: 0, resetMs: 600, retryAfterMs: 0, waitMs: 200 },
    ]);
  });

  it('never waits while banned, and a reserved turn is no violation', async () => {
    const side = sideOf();
    side.at(T0);
    const policy: CompiledPolicy = {
      ...bucket(),
      ban: { blockMs: 5000, violations: 0, violationWindowMs: 0, escalatedBlockMs: 5000 },
    };
    const entry: StoreEntry = { key: fresh(), policy, cost: 1, maxWaitMs: 250 };
    await check(side, [entry]);
    await check(side, [entry]);
    expect(await check(side, [entry])).toEqual([
      { allowed: true, remaining: 0, resetMs: 300, retryAfterMs: 0, waitMs: 100 },
    ]);
    // Two units wait 300 ms, beyond 250: a denial, which bans.
    expect(await check(side, [{ ...entry, cost: 2 }])).toEqual([
      { allowed: false, remaining: 0, resetMs: 300, retryAfterMs: 5000, banned: true },
    ]);
    // One unit's turn (200 ms) is within 250 ms, but the ban stands: no turn, nothing charged.
    expect(await check(side, [entry])).toEqual([
      { allowed: false, remaining: 0, resetMs: 300, retryAfterMs: 5000, banned: true },
    ]);
    expect((await side.store.decide([entry], 'peek'))[0]).toMatchObject({ resetMs: 300, retryAfterMs: 5000 });
  });

  it('a cancel (settle to 0 with the turn) gives the next check the turn it would have had', async () => {
    const side = sideOf();
    side.at(T0);
    const entry: StoreEntry = { key: fresh(), policy: bucket(), cost: 1, maxWaitMs: 1000 };
    const twin: StoreEntry = { ...entry, key: fresh() }; // the same history without the cancelled turn
    for (const e of [entry, entry, twin, twin]) await check(side, [e]);
    const [turn] = (await check(side, [{ ...entry, cost: 2 }])) as [StoreVerdict];
    expect(turn.waitMs).toBe(200);
    side.at(T0 + 30);
    const cancel = { key: entry.key, policy: entry.policy, reservedUnits: 2, actualUnits: 0 };
    expect(await side.store.settle([{ ...cancel, reservedAgoMs: 30, waitMs: 200 }])).toEqual([true]);
    expect(await check(side, [entry])).toEqual(await check(side, [twin]));
    expect(await check(side, [entry])).toEqual([
      { allowed: true, remaining: 0, resetMs: 370, retryAfterMs: 0, waitMs: 170 },
    ]);
  });

  it('a cancel behind a later turn gives back only what no later turn stands on', async () => {
    const side = sideOf();
    side.at(T0);
    const entry: StoreEntry = { key: fresh(), policy: bucket(), cost: 1, maxWaitMs: 1000 };
    await check(side, [entry]);
    await check(side, [entry]);
    expect((await check(side, [entry]))[0]?.waitMs).toBe(100); // A, cancelled below
    expect((await check(side, [entry]))[0]?.waitMs).toBe(200); // B keeps its turn
    side.at(T0 + 10);
    const cancel = { key: entry.key, policy: entry.policy, reservedUnits: 1, actualUnits: 0 };
    // A's turn was at +100; B's at +200 stands on it: nothing is given back.
    expect(await side.store.settle([{ ...cancel, reservedAgoMs: 10, waitMs: 100 }])).toEqual([false]);
    expect((await check(side, [entry]))[0]?.waitMs).toBe(290);
  });

  it('a cancel of the last turn just before it gives back every unit; without its wait, nothing', async () => {
    const side = sideOf();
    side.at(T0);
    const entry: StoreEntry = { key: fresh(), policy: bucket(), cost: 1, maxWaitMs: 1000 };
    for (let i = 0; i < 4; i++) await check(side, [entry]); // two now, turns at +100 and +200
    side.at(T0 + 150);
    const cancel = {
      key: entry.key,
      policy: entry.policy,
      reservedUnits: 1,
      actualUnits: 0,
      reservedAgoMs: 150,
    };
    // The last turn (+200) cancelled at +150. Told no wait, the settle counts 200 ms of refill
    // since the charge (the bucket was in debt all along): nothing comes back.
    expect(await side.store.settle([cancel])).toEqual([false]);
    // With its wait every unit comes back.
    expect(await side.store.settle([{ ...cancel, waitMs: 200 }])).toEqual([true]);
    expect((await check(side, [entry]))[0]?.waitMs).toBe(50);
  });

  it('cancels of a queue, the last turn first, each told a round trip, give every unit back', async () => {
    const side = sideOf();
    side.at(T0);
    const entry: StoreEntry = { key: fresh(), policy: bucket(), cost: 1, maxWaitMs: 1000 };
    const twin: StoreEntry = { ...entry, key: fresh() }; // the same history without the queue
    for (const e of [entry, entry, twin, twin]) await check(side, [e]);
    const turns: number[] = [];
    for (let i = 0; i < 8; i++) turns.push((await check(side, [entry]))[0]?.waitMs as number);
    expect(turns).toEqual([100, 200, 300, 400, 500, 600, 700, 800]);
    side.at(T0 + 30);
    // Each check was asked 2 ms before the store decided it and answered 3 ms after (another clock).
    const cancel = { key: entry.key, policy: entry.policy, reservedUnits: 1, actualUnits: 0 };
    for (const waitMs of turns.reverse()) {
      expect(await side.store.settle([{ ...cancel, reservedAgoMs: 32, answeredAgoMs: 27, waitMs }])).toEqual([
        true,
      ]);
    }
    expect(await check(side, [entry])).toEqual(await check(side, [twin]));
  });
});

describe('a reserved turn in Redis', () => {
  it('keeps its key until the debt is repaid and the bucket full (TTL), beyond one window', async () => {
    const side = redisSettleSide(redis.client);
    // One unit back every 200 s; turns up to an hour ahead (beyond the 600 s TTL floor of explicit time).
    const policy = makePolicy('token-bucket', 2, 400_000, 'slow');
    const entry: StoreEntry = { key: fresh(), policy, cost: 1, maxWaitMs: 3_600_000 };
    side.at(T0);
    let last: StoreVerdict | undefined;
    for (let i = 0; i < 12; i++) [last] = await side.store.decide([entry], 'consume');
    expect(last).toEqual({
      allowed: true,
      remaining: 0,
      resetMs: 2_400_000,
      retryAfterMs: 0,
      waitMs: 2_000_000,
    });
    const ttl = await redis.admin.pttl(entry.key);
    expect(ttl).toBeGreaterThan(2_400_000 - 60_000);
    expect(ttl).toBeLessThanOrEqual(2_400_001);
    expect(await redis.admin.get(entry.key)).toBe(`0|${T0 + 2_000_000}`);
    expect(await redis.admin.exists(banKeyOf(entry.key))).toBe(0);
  });
});

describe('the wire of waiting', () => {
  const decide = (keys: string[], ...args: (string | number)[]) =>
    redis.admin.eval(DECIDE_SCRIPT.source, keys.length, ...keys, ...args);

  it("sends a waiting entry as cost '<cost>~<maxWaitMs>' in the full form, never the short one", () => {
    const policy = bucket();
    const args = encodeScriptArgs([{ key: 'k', policy, cost: 1, maxWaitMs: 250 }], 'consume', T0);
    expect(args.slice(7)).toEqual(['consume', '', '1', '1', '1~250']);
    expect(encodeScriptArgs([{ key: 'k', policy, cost: 1, maxWaitMs: 0 }], 'consume', T0).slice(7)).toEqual([
      '1',
    ]);
  });

  it('replies a reserved turn as allowed with retryAfterMs > 0; rejects bad waiting items, writing nothing', async () => {
    const key = fresh();
    const TB = ['token-bucket', 1, 100, 100, 0];
    const consume = (cost: string) => decide([key], T0, 1, ...TB, 'consume', '', 1, 1, cost);
    expect(await consume('1~50')).toEqual([1, 0, 100, 0]);
    expect(await consume('1~150')).toEqual([1, 0, 200, 100]);
    expect(await consume('1~150')).toEqual([0, 0, 200, 200]);
    for (const bad of ['1~0', '1~x', '~5', '1~5~5', '2>1~5'])
      await expect(consume(bad)).rejects.toThrow(/cost/);
    await expect(
      decide([key], T0, 1, 'fixed-window', 1, 100, 100, 0, 'consume', '', 1, 1, '1~500'),
    ).rejects.toThrow(/waiting cost must be cost~maxWaitMs, both positive, on a token-bucket or gcra policy/);
    expect(await redis.admin.get(key)).toBe(`0|${T0 + 100}`);
    // Peek never waits.
    expect(await decide([key], T0, 1, ...TB, 'peek', '', 1, 1, '1~1000')).toEqual([0, 0, 200, 200]);
  });

  it('the settle script takes eight items per entry, or nine with the wait', async () => {
    const key = fresh();
    await redis.admin.set(key, `0|${T0 + 200}`);
    const settle = (...args: (string | number)[]) => redis.admin.eval(SETTLE_SCRIPT.source, 1, key, ...args);
    const TB = ['token-bucket', 2, 200, 100];
    await expect(settle(T0, ...TB, -1, 1, 0, 0, 0, 'extra')).rejects.toThrow(/expected 9 arguments/);
    await expect(settle(T0, ...TB, -1, 1, 0, 0, -5)).rejects.toThrow(/waitMs/);
    // Told no wait, the refund counts the 200 ms until the debt's end as refill: nothing.
    expect(await settle(T0, ...TB, -1, 1, 0, 0)).toEqual([0]);
    // Told the turn (200 ms after the charge), one unit comes back.
    expect(await settle(T0, ...TB, -1, 1, 0, 0, 200)).toEqual([1]);
    expect(await redis.admin.get(key)).toBe(`0|${T0 + 100}`);
  });

  it('a store refuses maxWaitMs it cannot honour, naming the field and the value', () => {
    const store = new MemoryStore({ clock: () => T0 });
    const entry: StoreEntry = { key: 'k', policy: bucket(), cost: 1 };
    expect(() => store.decideSync([{ ...entry, maxWaitMs: -1 }], 'consume')).toThrow(
      'store: "maxWaitMs" must be a finite number of ms >= 0, got -1 (policy "token-bucket")',
    );
    expect(() =>
      store.decideSync(
        [{ ...entry, policy: makePolicy('sliding-log', 2, 200, 'log'), maxWaitMs: 100 }],
        'consume',
      ),
    ).toThrow(
      'store: "maxWaitMs" works with token-bucket and gcra (they reserve a turn), got 100 for sliding-log',
    );
    expect(() => store.decideSync([{ ...entry, leastCost: 1, maxWaitMs: 100 }], 'consume')).toThrow(
      'store: "maxWaitMs" cannot go with "leastCost"',
    );
    expect(() =>
      store.settleSync([
        {
          key: 'k',
          policy: bucket(),
          reservedUnits: 1,
          actualUnits: 0,
          reservedAgoMs: 0,
          waitMs: Number.NaN,
        },
      ]),
    ).toThrow('store: "waitMs" must be a finite number of ms >= 0, got NaN');
  });
});
