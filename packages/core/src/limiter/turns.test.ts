/**
 * Waiting for a turn through the limiter, on MemoryStore and on a real Redis: a check over the
 * limit whose turn comes within `maxWaitMs` is admitted exactly at it (never early), one whose turn
 * is further is answered at once with the real wait, a cancel (signal, `close()`) gives the units
 * back, `maxWaiting` bounds the waiters, and the descriptor's `maxWaitMs` overrides the policy's.
 * Timers are faked and the clock injected: no test sleeps.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { useRedis } from '../../../../test/support/redis-fixture.js';
import { MemoryStore } from '../stores/memory-store.js';
import { RedisStore } from '../stores/redis-store.js';
import type { Clock, Decision, PolicyInput, Store } from '../types.js';
import { createLimiter } from './create-limiter.js';
import type { Limiter } from './limiter.js';

const START_MS = 1_764_400_000_500;
/** Burst 5, one unit every 100 ms; a request may wait up to 1 s for its turn. */
const QUEUED: PolicyInput = {
  name: 'queued',
  algorithm: 'token-bucket',
  burst: 5,
  rate: '10/s',
  maxWaitMs: 1000,
};

const redis = useRedis();
let prefixCount = 0;

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

const STORES: readonly { name: string; make: (clock: Clock) => Store }[] = [
  { name: 'memory', make: (clock) => new MemoryStore({ clock }) },
  { name: 'redis', make: (clock) => new RedisStore({ client: redis.client, clock }) },
];

/** Lets I/O and promise callbacks run (setImmediate is not faked), without moving the fake time. */
async function settleIo(times = 20): Promise<void> {
  for (let i = 0; i < times; i++) await new Promise((resolve) => setImmediate(resolve));
}

/** Real time a store may take to answer (Date is not faked), within the 5 s a test has: a loaded machine answers late, not never. */
const IO_DEADLINE_MS = 4_000;

/**
 * Lets I/O run (setImmediate is not faked) until `done()` holds, or `IO_DEADLINE_MS` of real time
 * passed. Bounded by time, not by turns: on a busy machine Redis may take more than thousands of
 * event-loop turns to answer.
 */
async function untilIo(done: () => boolean): Promise<void> {
  const deadlineMs = Date.now() + IO_DEADLINE_MS;
  while (!done() && Date.now() < deadlineMs) await new Promise((resolve) => setImmediate(resolve));
}

/** Lets I/O run until `done()` holds; fails when it does not within `IO_DEADLINE_MS`. */
async function until(done: () => boolean): Promise<void> {
  await untilIo(done);
  expect(done()).toBe(true);
}

/** Lets I/O run until `limiter` has `count` checks waiting under `policy` (the store answered them). */
async function untilWaiting(limiter: Limiter, count: number, policy = 'queued'): Promise<void> {
  await untilIo(() => (limiter.counters.overload.waiting.get(policy) ?? 0) >= count);
  expect(limiter.counters.overload.waiting.get(policy)).toBe(count);
}

/** A check in flight, and whether it resolved yet. */
function track(promise: Promise<Decision>) {
  const state: { decision: Decision | undefined } = { decision: undefined };
  void promise.then((d) => {
    state.decision = d;
  });
  return state;
}

describe.each(STORES)('waiting for a turn on $name', ({ make }) => {
  /**
   * A limiter on fake timers and a fake monotonic clock (`performance.now`), with two injected
   * clocks: the store's (Redis `TIME`, never set back) and the limiter's wall clock, which
   * `stepWall` sets back or forth alone, as an NTP step or an operator would.
   */
  function setUp(policies: PolicyInput[] = [QUEUED], options: { maxWaiting?: number } = {}) {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    let now = START_MS;
    let wallMs = START_MS;
    const storeClock = () => now;
    const limiter = createLimiter({
      policies,
      store: make(storeClock),
      clock: () => wallMs,
      prefix: `turns${++prefixCount}`,
      ...options,
    });
    const advance = async (ms: number) => {
      now += ms;
      wallMs += ms;
      await vi.advanceTimersByTimeAsync(ms);
      await settleIo();
    };
    const stepWall = (ms: number) => {
      wallMs += ms;
    };
    return { limiter, advance, stepWall };
  }

  /** Spends the burst of `identity` (under `policies`, all when unset). */
  async function spendBurst(limiter: Limiter, identity = 'u', units = 5, policies?: string[]): Promise<void> {
    for (let i = 0; i < units; i++) {
      expect((await limiter.check({ identity, ...(policies && { policies }) })).allowed).toBe(true);
    }
  }

  it('admits a check over the limit exactly at its turn, not before', async () => {
    const { limiter, advance } = setUp();
    await spendBurst(limiter);
    const first = track(limiter.check({ identity: 'u' }));
    const second = track(limiter.check({ identity: 'u' }));
    await untilWaiting(limiter, 2);
    await advance(99);
    expect(first.decision).toBeUndefined();
    await advance(1);
    expect(first.decision).toMatchObject({ allowed: true, outcome: 'allowed', policy: 'queued' });
    expect(second.decision).toBeUndefined();
    await advance(99);
    expect(second.decision).toBeUndefined();
    await advance(1);
    expect(second.decision?.allowed).toBe(true);
    expect(limiter.counters.overload.waiting.get('queued')).toBe(0);
    expect(limiter.counters.overload.admittedAfterWait.get('queued')).toBe(2);
  });

  it('waits for the turn a descriptor asks for on a limiter whose policies neither wait nor hold slots', async () => {
    const plain: PolicyInput = { name: 'plain', algorithm: 'token-bucket', burst: 5, rate: '10/s' };
    const { limiter, advance } = setUp([plain]);
    await spendBurst(limiter);
    const first = track(limiter.check({ identity: 'u', maxWaitMs: 1000 }));
    const second = track(limiter.check({ identity: 'u', maxWaitMs: 1000 }));
    await untilWaiting(limiter, 2, 'plain');
    expect([first.decision, second.decision]).toEqual([undefined, undefined]);
    await advance(99);
    expect(first.decision).toBeUndefined();
    await advance(1);
    expect(first.decision).toMatchObject({ allowed: true, policy: 'plain' });
    await advance(99);
    expect(second.decision).toBeUndefined();
    await advance(1);
    expect(second.decision?.allowed).toBe(true);
    expect(limiter.counters.overload.admittedAfterWait.get('plain')).toBe(2);
  });

  it('counts a check as waiting from when its wait is planned, before the store answers it', async () => {
    const { limiter } = setUp([QUEUED], { maxWaiting: 2 });
    await spendBurst(limiter);
    // Five checks at once: all are planned before the store answers the first.
    const checks = Array.from({ length: 5 }, () => track(limiter.check({ identity: 'u' })));
    await until(() => checks.filter((c) => c.decision !== undefined).length === 3);
    expect(checks.map((c) => c.decision?.allowed)).toEqual([undefined, undefined, false, false, false]);
    // The three answered at once reserved nothing: the next turn is the third one, 300 ms away.
    expect(checks[2]?.decision?.retryAfterMs).toBe(300);
    expect(limiter.counters.overload.waiting.get('queued')).toBe(2);
    await limiter.close();
    await until(() => checks.every((c) => c.decision !== undefined));
    // Every place is free again: two more may wait.
    const again = [track(limiter.check({ identity: 'u' })), track(limiter.check({ identity: 'u' }))];
    await untilWaiting(limiter, 2);
    expect(again.every((c) => c.decision === undefined)).toBe(true);
    await limiter.close();
  });

  it('admits a waiter at its turn when the wall clock is set back while it waits', async () => {
    const { limiter, advance, stepWall } = setUp();
    await spendBurst(limiter);
    const waiter = track(limiter.check({ identity: 'u' }));
    await untilWaiting(limiter, 1);
    await advance(10);
    stepWall(-5000);
    await advance(89);
    expect(waiter.decision).toBeUndefined();
    await advance(1);
    expect(waiter.decision?.allowed).toBe(true);
  });

  it('a cancelled wait counts the time left on the monotonic clock, whatever the wall clock did', async () => {
    const { limiter, advance, stepWall } = setUp();
    await spendBurst(limiter);
    const controller = new AbortController();
    const waiter = track(limiter.check({ identity: 'u', signal: controller.signal }));
    await untilWaiting(limiter, 1);
    await advance(40);
    stepWall(5000);
    controller.abort();
    await until(() => waiter.decision !== undefined);
    expect(waiter.decision).toMatchObject({ allowed: false, retryAfterMs: 60 });
  });

  it.each([
    [
      'throws',
      () => {
        throw new Error('no signal here');
      },
    ],
    ['returns an AbortController', () => new AbortController()],
    ['returns an empty object', () => ({})],
    ['returns an object without removeEventListener', () => ({ aborted: false, addEventListener() {} })],
  ])(
    'refuses a signal function that %s with a TypeError naming descriptor.signal, holding nothing',
    async (_, make) => {
      const inFlight: PolicyInput = { name: 'in-flight', algorithm: 'concurrency', limit: 1, leaseMs: 1000 };
      const { limiter, advance } = setUp([inFlight, QUEUED]);
      for (let i = 0; i < 5; i++) {
        const d = await limiter.check({ identity: 'u' });
        expect(d.allowed).toBe(true);
        await limiter.release(d);
      }
      const signal = make as unknown as () => AbortSignal;
      await expect(limiter.check({ identity: 'u', signal })).rejects.toThrow(
        expect.objectContaining({ name: 'TypeError', message: expect.stringMatching(/descriptor\.signal/) }),
      );
      expect(limiter.counters.overload.held.get('in-flight')).toBe(0);
      expect(limiter.counters.overload.waiting.get('queued') ?? 0).toBe(0);
      // Its turn was given back: the next check's turn is 100 ms away, not 200.
      expect((await limiter.peek({ identity: 'u', policies: ['queued'] })).retryAfterMs).toBe(100);
      // No timer of it fires later.
      await advance(2000);
      const next = await limiter.check({ identity: 'u', maxWaitMs: 0 });
      expect(next.allowed).toBe(true);
      expect(limiter.counters.overload.held.get('in-flight')).toBe(1);
    },
  );

  it("refuses a descriptor's maxWaitMs past one hour at the call, as the policy field, charging nothing", async () => {
    const { limiter, advance } = setUp();
    await spendBurst(limiter);
    await expect(limiter.check({ identity: 'u', maxWaitMs: 3_600_001 })).rejects.toThrow(
      new TypeError('limiter.check: descriptor.maxWaitMs must be at most one hour (3600000 ms), got 3600001'),
    );
    await expect(limiter.check({ identity: 'u', maxWaitMs: 2 ** 31 + 5 })).rejects.toThrow(
      /descriptor\.maxWaitMs/,
    );
    expect((await limiter.peek({ identity: 'u' })).retryAfterMs).toBe(100);
    const hour = track(limiter.check({ identity: 'u', maxWaitMs: 3_600_000 }));
    await untilWaiting(limiter, 1);
    await advance(100);
    expect(hour.decision?.allowed).toBe(true);
  });

  it('refuses at the call a signal object without removeEventListener, charging nothing', async () => {
    const { limiter } = setUp();
    await spendBurst(limiter);
    const signal = { aborted: false, addEventListener() {} } as unknown as AbortSignal;
    await expect(limiter.check({ identity: 'u', signal })).rejects.toThrow(/descriptor\.signal/);
    expect(limiter.counters.overload.waiting.get('queued') ?? 0).toBe(0);
    expect((await limiter.peek({ identity: 'u' })).retryAfterMs).toBe(100);
  });

  it('answers at once, with the real wait, a check whose turn lies past maxWaitMs', async () => {
    const { limiter } = setUp();
    await spendBurst(limiter);
    // Ten turns of 100 ms are taken: the next one is 1100 ms away.
    const waiting = Array.from({ length: 10 }, () => track(limiter.check({ identity: 'u' })));
    await untilWaiting(limiter, 10);
    const late = await limiter.check({ identity: 'u' });
    expect(late).toMatchObject({ allowed: false, outcome: 'over_limit', policy: 'queued' });
    expect(late.retryAfterMs).toBe(1100);
    expect(waiting.every((w) => w.decision === undefined)).toBe(true);
    await limiter.close();
  });

  it('gives the units back when the signal aborts a wait, and the next check gets the earlier turn', async () => {
    const { limiter, advance } = setUp();
    await spendBurst(limiter);
    const controller = new AbortController();
    const aborted = track(limiter.check({ identity: 'u', signal: controller.signal }));
    await untilWaiting(limiter, 1);
    await advance(40);
    controller.abort();
    await until(() => aborted.decision !== undefined);
    expect(aborted.decision).toMatchObject({ allowed: false, outcome: 'over_limit', policy: 'queued' });
    expect(aborted.decision?.retryAfterMs).toBe(60);
    expect(limiter.counters.overload.cancelledWaits.get('queued')).toBe(1);
    // The turn 100 ms after the burst is free again: the next check waits 60 ms, not 160.
    const next = track(limiter.check({ identity: 'u' }));
    await untilWaiting(limiter, 1);
    await advance(59);
    expect(next.decision).toBeUndefined();
    await advance(1);
    expect(next.decision?.allowed).toBe(true);
  });

  it('makes the signal from a function only for a check that waits', async () => {
    const { limiter, advance } = setUp();
    let made = 0;
    const controller = new AbortController();
    const signal = () => {
      made++;
      return controller.signal;
    };
    await spendBurst(limiter);
    expect(made).toBe(0);
    const waiting = track(limiter.check({ identity: 'u', signal }));
    await untilWaiting(limiter, 1);
    expect(made).toBe(1);
    controller.abort();
    await until(() => waiting.decision !== undefined);
    expect(waiting.decision?.allowed).toBe(false);
    await advance(100);
    expect((await limiter.check({ identity: 'v', signal })).allowed).toBe(true);
    expect(made).toBe(1);
  });

  it('a check whose signal was aborted already reserves nothing for long', async () => {
    const { limiter } = setUp();
    await spendBurst(limiter);
    const decision = await limiter.check({ identity: 'u', signal: AbortSignal.abort() });
    expect(decision).toMatchObject({ allowed: false, outcome: 'over_limit' });
    const peek = await limiter.peek({ identity: 'u' });
    expect(peek.retryAfterMs).toBe(100);
  });

  it('close() cancels every wait and gives the units back', async () => {
    const { limiter } = setUp();
    await spendBurst(limiter);
    const waiters = [track(limiter.check({ identity: 'u' })), track(limiter.check({ identity: 'u' }))];
    await untilWaiting(limiter, 2);
    await limiter.close();
    await until(() => waiters.every((w) => w.decision !== undefined));
    expect(waiters.map((w) => w.decision?.allowed)).toEqual([false, false]);
    expect((await limiter.peek({ identity: 'u' })).retryAfterMs).toBe(100);
  });

  it('answers at once past maxWaiting checks waiting in this process', async () => {
    const { limiter } = setUp([QUEUED], { maxWaiting: 2 });
    await spendBurst(limiter);
    const waiters = [track(limiter.check({ identity: 'u' })), track(limiter.check({ identity: 'u' }))];
    await untilWaiting(limiter, 2);
    const third = await limiter.check({ identity: 'u' });
    expect(third).toMatchObject({ allowed: false, retryAfterMs: 300 });
    expect(waiters.every((w) => w.decision === undefined)).toBe(true);
    await limiter.close();
  });

  it("the descriptor's maxWaitMs overrides the policy's: 0 never waits, a number lets another policy wait", async () => {
    const plain: PolicyInput = { name: 'plain', algorithm: 'gcra', burst: 2, rate: '10/s' };
    const { limiter, advance } = setUp([QUEUED, plain]);
    await spendBurst(limiter, 'u', 5, ['queued']);
    const noWait = await limiter.check({ identity: 'u', maxWaitMs: 0, policies: ['queued'] });
    expect(noWait).toMatchObject({ allowed: false, retryAfterMs: 100 });
    await spendBurst(limiter, 'v', 2, ['plain']);
    expect((await limiter.check({ identity: 'v', policies: ['plain'] })).allowed).toBe(false);
    const waits = track(limiter.check({ identity: 'v', policies: ['plain'], maxWaitMs: 500 }));
    await untilWaiting(limiter, 1, 'plain');
    expect(waits.decision).toBeUndefined();
    await advance(100);
    expect(waits.decision?.allowed).toBe(true);
  });

  it('with several policies, waits for the turn when every one admits, and a denial reserves nothing', async () => {
    const slow: PolicyInput = {
      name: 'slow',
      algorithm: 'token-bucket',
      burst: 1,
      rate: '4/s',
      maxWaitMs: 1000,
    };
    const { limiter, advance } = setUp([QUEUED, slow]);
    expect((await limiter.check({ identity: 'u' })).allowed).toBe(true);
    // queued has 4 left; slow is empty: its turn is 250 ms away.
    const both = track(limiter.check({ identity: 'u' }));
    await untilWaiting(limiter, 1, 'slow');
    await advance(249);
    expect(both.decision).toBeUndefined();
    await advance(1);
    expect(both.decision?.allowed).toBe(true);
    // slow's next turn is 250 ms away: past this check's 100 ms, so it is denied at once and
    // charges queued nothing.
    const before = (await limiter.peek({ identity: 'u', policies: ['queued'] })).remaining;
    const tooFar = await limiter.check({ identity: 'u', maxWaitMs: 100 });
    expect(tooFar).toMatchObject({ allowed: false, policy: 'slow', retryAfterMs: 250 });
    expect((await limiter.peek({ identity: 'u', policies: ['queued'] })).remaining).toBe(before);
  });
});

describe('waiting while the store is down', () => {
  it("nothing waits under failMode 'local': the in-process fallback answers at once", async () => {
    const down: Store = {
      kind: 'down',
      decide: () => Promise.reject(new Error('down')),
      reset: async () => {},
    };
    const limiter = createLimiter({ policies: [{ ...QUEUED, failMode: 'local' }], store: down });
    for (let i = 0; i < 5; i++) expect((await limiter.check({ identity: 'u' })).allowed).toBe(true);
    const over = await limiter.check({ identity: 'u' });
    expect(over).toMatchObject({ allowed: false, source: 'local' });
    expect(over.retryAfterMs).toBeGreaterThan(0);
    expect(limiter.counters.overload.waiting.size).toBe(0);
  });
});

describe('which policies a check waits for', () => {
  it('never for a shadow policy, nor one with a lease or a local stage, whatever the descriptor asks', async () => {
    const clock = () => START_MS;
    const limiter = createLimiter({
      policies: [
        { name: 'shadowed', algorithm: 'token-bucket', burst: 1, rate: '10/s', shadow: true },
        {
          name: 'leased',
          algorithm: 'token-bucket',
          burst: 1,
          rate: '10/s',
          lease: { units: 1, ttlMs: 1000 },
        },
        { name: 'staged', algorithm: 'gcra', burst: 1, rate: '10/s', local: { burst: 1, rate: '10/s' } },
      ],
      store: new MemoryStore({ clock }),
      clock,
    });
    for (const name of ['shadowed', 'leased', 'staged']) {
      expect((await limiter.check({ identity: 'u', policies: [name] })).results[0]?.allowed).toBe(true);
      const again = await limiter.check({ identity: 'u', policies: [name], maxWaitMs: 1000 });
      expect(again.results[0]).toMatchObject({ allowed: false, outcome: 'over_limit' });
      expect(again.outcome).toBe(name === 'shadowed' ? 'allowed' : 'over_limit');
    }
    expect(limiter.counters.overload.waiting.size).toBe(0);
  });
});

describe('a timer that fires early', () => {
  it('never admits before the monotonic clock reads the turn: the timer is armed again for the rest', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const clock = () => START_MS;
    // The monotonic clock, moved by hand apart from the fake timers.
    let monotonicMs = 1000;
    vi.spyOn(performance, 'now').mockImplementation(() => monotonicMs);
    const limiter = createLimiter({ policies: [QUEUED], store: new MemoryStore({ clock }), clock });
    for (let i = 0; i < 5; i++) await limiter.check({ identity: 'u' });
    const waiter = track(limiter.check({ identity: 'u' }));
    await untilWaiting(limiter, 1);
    // The timer's 100 ms pass while the clock moved 99 (Node's timers fire up to 1 ms early).
    monotonicMs += 99;
    await vi.advanceTimersByTimeAsync(100);
    expect(waiter.decision).toBeUndefined();
    monotonicMs += 1;
    await vi.advanceTimersByTimeAsync(1);
    expect(waiter.decision?.allowed).toBe(true);
  });
});
