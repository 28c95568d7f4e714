/**
 * Concurrency slots through the limiter, on MemoryStore and on a real Redis: held from the
 * decision until `release` (once), all or nothing with rate policies, renewed before their lease
 * runs out, lost slots reported and never re-taken, `close()` freeing them, and the counters the
 * metrics read. Timers are faked and the clock injected: no test sleeps.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { useRedis } from '../../../../test/support/redis-fixture.js';
import { MemoryStore } from '../stores/memory-store.js';
import { RedisStore } from '../stores/redis-store.js';
import type { Clock, PolicyInput, SlotLostEvent, Store } from '../types.js';
import { createLimiter } from './create-limiter.js';

const START_MS = 1_764_400_000_500;
const IN_FLIGHT: PolicyInput = { name: 'in-flight', algorithm: 'concurrency', limit: 2, leaseMs: 1000 };
const RATE: PolicyInput = { name: 'rate', algorithm: 'fixed-window', limit: 3, window: '1m' };

const redis = useRedis();
let prefixCount = 0;

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

/** Lets I/O and promise callbacks run (setImmediate is not faked), without moving the fake time. */
async function settleIo(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
}

/**
 * Each store, and how to wait until the calls sent to it were answered: Redis answers one
 * connection's commands in order, so a PING sent after them returns after their replies.
 */
const STORES: readonly { name: string; make: (clock: Clock) => Store; flush: () => Promise<unknown> }[] = [
  { name: 'memory', make: (clock) => new MemoryStore({ clock }), flush: settleIo },
  {
    name: 'redis',
    make: (clock) => new RedisStore({ client: redis.client, clock }),
    flush: async () => {
      await settleIo();
      await redis.client.ping();
      await settleIo();
    },
  },
];

/**
 * A clock moved by hand, with the fake timers and the fake monotonic clock (`performance.now`)
 * moved alongside it; `flush` waits for the store's answers.
 */
function handClock(flush: () => Promise<unknown>) {
  let now = START_MS;
  const clock = () => now;
  const advance = async (ms: number) => {
    now += ms;
    await vi.advanceTimersByTimeAsync(ms);
    await flush();
  };
  /** Moves the clock alone: a process that was paused, its timers not run. */
  const jump = (ms: number) => {
    now += ms;
  };
  return { clock, advance, jump };
}

describe.each(STORES)('concurrency slots on $name', ({ make, flush }) => {
  /** Fleets of limiters over one store state, each test with keys of its own. */
  function fleet(size: number, policies: PolicyInput[] = [IN_FLIGHT]) {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    const hands = handClock(flush);
    const prefix = `slots${++prefixCount}`;
    const store = make(hands.clock);
    const limiters = Array.from({ length: size }, () =>
      createLimiter({ policies, store, clock: hands.clock, prefix, denyCache: false }),
    );
    return { ...hands, limiters };
  }

  it('admits `limit` checks at once, denies the next until one is released, and releases once', async () => {
    const { limiters } = fleet(2);
    const [a, b] = limiters as [ReturnType<typeof createLimiter>, ReturnType<typeof createLimiter>];
    const first = await a.check({ identity: 'u' });
    const second = await b.check({ identity: 'u' });
    expect([first.allowed, second.allowed]).toEqual([true, true]);
    expect(a.hasSlots(first)).toBe(true);
    const third = await a.check({ identity: 'u' });
    expect(third).toMatchObject({ allowed: false, outcome: 'over_limit', policy: 'in-flight' });
    expect(third.retryAfterMs).toBeGreaterThan(0);
    expect(third.retryAfterMs).toBeLessThanOrEqual(1000);
    expect(a.hasSlots(third)).toBe(false);
    // Another identity has slots of its own.
    expect((await a.check({ identity: 'v' })).allowed).toBe(true);

    await a.release(first);
    expect(a.hasSlots(first)).toBe(false);
    expect((await b.check({ identity: 'u' })).allowed).toBe(true);
    // A second release of the same decision frees nothing more.
    await a.release(first);
    expect((await a.check({ identity: 'u' })).allowed).toBe(false);
    expect(a.counters.overload.held.get('in-flight')).toBe(1);
  });

  it('decides a slot and a rate policy all or nothing, both ways', async () => {
    const { limiters } = fleet(1, [IN_FLIGHT, RATE]);
    const limiter = limiters[0]!;
    const held = [await limiter.check({ identity: 'u' }), await limiter.check({ identity: 'u' })];
    expect(held.every((d) => d.allowed)).toBe(true);
    // No slot: the rate policy is not charged.
    const noSlot = await limiter.check({ identity: 'u' });
    expect(noSlot).toMatchObject({ allowed: false, policy: 'in-flight' });
    expect(noSlot.results.find((r) => r.policy === 'rate')?.remaining).toBe(1);
    await limiter.release(held[0]!);
    expect((await limiter.check({ identity: 'u' })).allowed).toBe(true);
    await Promise.all(held.map((d) => limiter.release(d)));
    // The rate is spent: the denied check takes no slot (a third check of the slot is admitted after).
    const overRate = await limiter.check({ identity: 'u' });
    expect(overRate).toMatchObject({ allowed: false, policy: 'rate' });
    expect(limiter.hasSlots(overRate)).toBe(false);
    const peek = await limiter.peek({ identity: 'u', policies: ['in-flight'] });
    expect(peek.remaining).toBe(1);
  });

  it('takes one slot per check whatever the cost', async () => {
    const { limiters } = fleet(1, [IN_FLIGHT, { ...RATE, limit: 100 }]);
    const limiter = limiters[0]!;
    const d = await limiter.check({ identity: 'u', cost: 7 });
    expect(d.allowed).toBe(true);
    expect(d.results.map((r) => [r.policy, r.cost])).toEqual([
      ['in-flight', 1],
      ['rate', 7],
    ]);
  });

  it('renews a held slot before its lease runs out, so a long request keeps it', async () => {
    const { limiters, advance } = fleet(2);
    const [a, b] = limiters as [ReturnType<typeof createLimiter>, ReturnType<typeof createLimiter>];
    const held = [await a.check({ identity: 'u' }), await a.check({ identity: 'u' })];
    expect(held.every((d) => d.allowed)).toBe(true);
    // Five leases later, the slots are still held: renewed every half lease.
    for (let i = 0; i < 10; i++) await advance(500);
    expect((await b.check({ identity: 'u' })).allowed).toBe(false);
    expect(a.counters.overload.lost.get('in-flight') ?? 0).toBe(0);
    await a.release(held[0]!);
    expect((await b.check({ identity: 'u' })).allowed).toBe(true);
  });

  it('reclaims the slots of an instance that stopped renewing once their lease ran out, and counts them', async () => {
    const { limiters, advance } = fleet(2);
    const [dead, alive] = limiters as [ReturnType<typeof createLimiter>, ReturnType<typeof createLimiter>];
    await dead.check({ identity: 'u' });
    await dead.check({ identity: 'u' });
    // The instance dies: its renewals stop (close() would release; a crash does not).
    vi.clearAllTimers();
    await advance(999);
    expect((await alive.check({ identity: 'u' })).allowed).toBe(false);
    await advance(2);
    const after = await alive.check({ identity: 'u' });
    expect(after.allowed).toBe(true);
    expect(alive.counters.overload.reclaimed.get('in-flight')).toBe(2);
  });

  it('reports a slot lost when a renewal finds it taken back, and never takes it again', async () => {
    const { limiters, jump, advance } = fleet(2);
    const [paused, other] = limiters as [ReturnType<typeof createLimiter>, ReturnType<typeof createLimiter>];
    const lost: SlotLostEvent[] = [];
    paused.onSlotLost((event) => lost.push(event));
    const held = await paused.check({ identity: 'u' });
    expect(held.allowed).toBe(true);
    // The process is paused past the lease; meanwhile another instance fills the slots.
    jump(1500);
    expect((await other.check({ identity: 'u' })).allowed).toBe(true);
    expect((await other.check({ identity: 'u' })).allowed).toBe(true);
    // Its renewal timer fires (half a lease after the check, by its own timers).
    await advance(500);
    expect(lost).toEqual([{ policy: 'in-flight' }]);
    expect(paused.counters.overload.lost.get('in-flight')).toBe(1);
    expect(paused.counters.overload.held.get('in-flight')).toBe(0);
    // Never re-taken: the two other holders still fill the limit.
    expect((await other.check({ identity: 'u' })).allowed).toBe(false);
    await paused.release(held);
    expect((await other.check({ identity: 'u' })).allowed).toBe(false);
  });

  it('keeps renewing a held slot when the wall clock is set back', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    const { clock, advance } = handClock(flush);
    const prefix = `slots${++prefixCount}`;
    const store = make(clock);
    const policies: PolicyInput[] = [{ ...IN_FLIGHT, limit: 1 }];
    // The holder's wall clock is set back 5 s; the store's clock (Redis TIME) is not.
    let wallMs = START_MS;
    const holder = createLimiter({ policies, store, clock: () => wallMs, prefix, denyCache: false });
    const other = createLimiter({ policies, store, clock, prefix, denyCache: false });
    const held = await holder.check({ identity: 'u' });
    expect(held.allowed).toBe(true);
    await advance(100);
    wallMs -= 5000;
    for (let i = 0; i < 10; i++) {
      await advance(500);
      expect((await other.check({ identity: 'u' })).allowed).toBe(false);
    }
    expect(holder.counters.overload.lost.get('in-flight') ?? 0).toBe(0);
    await holder.release(held);
    expect((await other.check({ identity: 'u' })).allowed).toBe(true);
  });

  it('renews a slot of a lease past 2^31 ms in time, never arming a timer past it', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    let now = START_MS;
    const clock = () => now;
    const prefix = `slots${++prefixCount}`;
    const store = make(clock);
    const dayMs = 86_400_000;
    const policies: PolicyInput[] = [{ ...IN_FLIGHT, limit: 1, leaseMs: '100d' }];
    const holder = createLimiter({ policies, store, clock, prefix, denyCache: false });
    const other = createLimiter({ policies, store, clock, prefix, denyCache: false });
    const armed = vi.spyOn(globalThis, 'setTimeout');
    const held = await holder.check({ identity: 'u' });
    expect(held.allowed).toBe(true);
    // Three leases pass, timer by timer (the store's clock moved alongside): a few dozen fire at most.
    const endMs = performance.now() + 300 * dayMs;
    let fired = 0;
    while (performance.now() < endMs && fired < 100) {
      const beforeMs = performance.now();
      await vi.advanceTimersToNextTimerAsync();
      now += performance.now() - beforeMs;
      fired++;
      await flush();
    }
    expect(fired).toBeLessThan(100);
    expect(armed.mock.calls.every(([, delayMs]) => (delayMs ?? 0) <= 2 ** 31 - 1)).toBe(true);
    expect((await other.check({ identity: 'u' })).allowed).toBe(false);
    expect(holder.counters.overload.lost.get('in-flight') ?? 0).toBe(0);
    await holder.release(held);
    expect((await other.check({ identity: 'u' })).allowed).toBe(true);
  });

  it('never remembers a concurrency denial in the deny cache: a release admits the next check at once', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    const { clock } = handClock(flush);
    const limiter = createLimiter({
      policies: [IN_FLIGHT, { ...RATE, limit: 100 }],
      store: make(clock),
      clock,
      prefix: `slots${++prefixCount}`,
    });
    const held = [await limiter.check({ identity: 'u' }), await limiter.check({ identity: 'u' })];
    expect((await limiter.check({ identity: 'u' })).source).toBe('store');
    await limiter.release(held[0]!);
    const next = await limiter.check({ identity: 'u' });
    expect(next).toMatchObject({ allowed: true, source: 'store' });
    expect(limiter.counters.remembered['deny-cache']).toBe(0);
  });

  it('never remembers a concurrency denial, also beside a rate policy with a local stage', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { clock, advance } = handClock(flush);
    const limiter = createLimiter({
      policies: [
        { ...IN_FLIGHT, leaseMs: 5000 },
        { ...RATE, limit: 100, local: { burst: 50, rate: '50/s' } },
      ],
      store: make(clock),
      clock,
      prefix: `slots${++prefixCount}`,
    });
    const held = [await limiter.check({ identity: 'u' }), await limiter.check({ identity: 'u' })];
    const denied = await limiter.check({ identity: 'u' });
    expect(denied).toMatchObject({ allowed: false, source: 'store', policy: 'in-flight' });
    await limiter.release(held[0]!);
    await advance(10);
    // The slot is free: the next check is the store's, admitted, never a remembered denial.
    expect(await limiter.check({ identity: 'u' })).toMatchObject({ allowed: true, source: 'store' });
    await limiter.release(held[1]!);
    const denials: string[] = [];
    for (let i = 0; i < 3; i++) {
      const next = await limiter.check({ identity: 'u' });
      denials.push(`${next.allowed} ${next.source}`);
    }
    expect(denials).toEqual(['true store', 'false store', 'false store']);
    expect(limiter.counters.remembered['deny-cache']).toBe(0);
  });

  it('a replay of an allowed check (requestId) takes a slot of its own, or is not admitted', async () => {
    const { limiters } = fleet(2, [{ ...IN_FLIGHT, limit: 1 }]);
    const [a, b] = limiters as [ReturnType<typeof createLimiter>, ReturnType<typeof createLimiter>];
    const first = await a.check({ identity: 'u', requestId: 'r' });
    expect(first.allowed).toBe(true);
    await a.release(first);
    // The retry is admitted as the first was, holding a slot taken now: no other check gets in.
    const retry = await a.check({ identity: 'u', requestId: 'r' });
    expect([retry.allowed, a.hasSlots(retry)]).toEqual([true, true]);
    expect((await b.check({ identity: 'u' })).allowed).toBe(false);
    await a.release(retry);
    // With the one slot held by another check, a replay is not admitted.
    const other = await b.check({ identity: 'u' });
    expect(other.allowed).toBe(true);
    const late = await a.check({ identity: 'u', requestId: 'r' });
    expect([late.allowed, late.policy, a.hasSlots(late)]).toEqual([false, 'in-flight', false]);
    await b.release(other);
    expect((await b.check({ identity: 'u' })).allowed).toBe(true);
  });

  it('close() frees every slot held', async () => {
    const { limiters } = fleet(2);
    const [a, b] = limiters as [ReturnType<typeof createLimiter>, ReturnType<typeof createLimiter>];
    const held = [await a.check({ identity: 'u' }), await a.check({ identity: 'v' })];
    await a.close();
    expect(held.map((d) => a.hasSlots(d))).toEqual([false, false]);
    expect(a.counters.overload.held.get('in-flight')).toBe(0);
    expect((await b.check({ identity: 'u' })).allowed).toBe(true);
    expect((await b.check({ identity: 'u' })).allowed).toBe(true);
  });
});

describe('concurrency slots under failMode', () => {
  it("a store failure admits a fail-open slot policy holding nothing, and 'local' holds the slot in-process", async () => {
    const failing: Store = {
      kind: 'down',
      decide: () => Promise.reject(new Error('down')),
      reset: () => Promise.resolve(),
    };
    const open = createLimiter({ policies: [{ ...IN_FLIGHT, failMode: 'open' }], store: failing });
    const d = await open.check({ identity: 'u' });
    expect(d).toMatchObject({ allowed: true, outcome: 'unavailable', source: 'fail-open' });
    expect(open.hasSlots(d)).toBe(false);

    const local = createLimiter({ policies: [{ ...IN_FLIGHT, failMode: 'local' }], store: failing });
    const held = [await local.check({ identity: 'u' }), await local.check({ identity: 'u' })];
    expect(held.map((x) => [x.allowed, x.source])).toEqual([
      [true, 'local'],
      [true, 'local'],
    ]);
    expect(held.map((x) => local.hasSlots(x))).toEqual([true, true]);
    expect((await local.check({ identity: 'u' })).allowed).toBe(false);
    await local.release(held[0]!);
    expect((await local.check({ identity: 'u' })).allowed).toBe(true);
  });
});
