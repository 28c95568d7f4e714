/**
 * The limiter's edges pinned to exact answers: the breaker's cool-down when the clock goes back
 * or a call from before it opened fails late, the local fallback's keys and resets, the lead
 * policy of a decision on a tie, the event's duration, and the deny cache forgetting on a reset
 * of several keys. Time is injected (the limiter's clock, fake timers); nothing sleeps.
 */

import { describe, expect, it, vi } from 'vitest';
import { isStoreTimeoutError } from '../error-guards.js';
import { OPTION_DEFAULTS } from '../options/index.js';
import { definePolicy } from '../policy/define-policy.js';
import { MemoryStore } from '../stores/memory-store.js';
import type { CompiledPolicy, DecisionEvent, PolicyInput, Store } from '../types.js';
import { createLimiter } from './create-limiter.js';
import { buildDecision, resultFromVerdict, unavailableResult } from './decision.js';
import { LIMITER_DEFAULTS } from './options.js';
import { CircuitBreaker, StoreTimeoutError } from './store-call.js';
import { SwitchableStore } from './test-stores.test-support.js';

const T0 = 1_700_000_000_000;

function setup(policies: readonly PolicyInput[], extra: Record<string, unknown> = {}) {
  const clock = { now: T0 };
  const tick = () => clock.now;
  const store = new SwitchableStore(tick);
  const events: DecisionEvent[] = [];
  const limiter = createLimiter({
    policies,
    store,
    clock: tick,
    timeoutMs: 20,
    onDecision: (e) => events.push(e),
    ...extra,
  });
  return { clock, store, limiter, events };
}

describe('CircuitBreaker: the cool-down', () => {
  it('restarts the cool-down from a clock that went back, instead of waiting out the old one', () => {
    let now = T0;
    const breaker = new CircuitBreaker(1, 1000, () => now);
    breaker.failure(breaker.permit());
    expect(breaker.state).toBe('open');
    now = T0 - 10_000;
    expect(breaker.permit()).toBe('reject');
    expect(breaker.remainingCooldownMs).toBe(1000);
    now += 999;
    expect(breaker.permit()).toBe('reject');
    now += 1;
    expect(breaker.permit()).toBe('probe');
  });

  it('a call let through before the breaker opened does not restart the cool-down when it fails late', () => {
    let now = T0;
    const breaker = new CircuitBreaker(1, 1000, () => now);
    const first = breaker.permit();
    const second = breaker.permit();
    expect([first, second]).toEqual(['call', 'call']);
    breaker.failure(first);
    expect(breaker.state).toBe('open');
    now += 500;
    breaker.failure(second);
    expect(breaker.remainingCooldownMs).toBe(500);
    now += 500;
    expect(breaker.state).toBe('half-open');
    expect(breaker.permit()).toBe('probe');
  });

  it('reports no cool-down left when closed, the time left while open, and none once it is over', () => {
    let now = T0;
    const breaker = new CircuitBreaker(2, 1000, () => now);
    expect(breaker.remainingCooldownMs).toBe(0);
    breaker.failure(breaker.permit());
    expect([breaker.state, breaker.remainingCooldownMs]).toEqual(['closed', 0]);
    breaker.failure(breaker.permit());
    now += 300;
    expect([breaker.state, breaker.remainingCooldownMs]).toEqual(['open', 700]);
    now += 5000;
    expect([breaker.state, breaker.remainingCooldownMs]).toEqual(['half-open', 0]);
  });

  it('a limiter without a breaker says closed, even while the store is down', async () => {
    const { limiter, store } = setup([{ name: 'p', limit: 5, window: '1s' }], { breaker: false });
    store.behaviour = 'error';
    for (let i = 0; i < 10; i++) await limiter.check({ identity: 'a' });
    expect(limiter.breakerState).toBe('closed');
    expect(store.calls).toHaveLength(10);
  });
});

describe('the local fallback: keys and resets', () => {
  const open: PolicyInput = { name: 'lenient', limit: 10, window: '1s', failMode: 'open' };
  const local: PolicyInput = { name: 'local', burst: 2, rate: '1/s', failMode: 'local' };

  it('counts no evictions before it is first used, and holds only the local policies keys', async () => {
    const { limiter, store } = setup([open, local], { breaker: false, localFallback: { maxKeys: 1 } });
    expect(limiter.liveEvictions).toBe(0);
    store.behaviour = 'error';
    const seen = [];
    for (let i = 0; i < 3; i++) seen.push(await limiter.check({ identity: 'a' }));
    // One key fits: the open policy's key never enters the fallback, so nothing is evicted and
    // the local policy keeps its count.
    expect(seen.map((d) => [d.allowed, d.source, d.results[1]!.remaining])).toEqual([
      [true, 'local', 1],
      [true, 'local', 0],
      [false, 'local', 0],
    ]);
    expect(limiter.liveEvictions).toBe(0);
  });

  it('a reset before the fallback was ever used reaches the store', async () => {
    const { limiter, store } = setup([local], { breaker: false });
    for (let i = 0; i < 2; i++) await limiter.check({ identity: 'a' });
    await limiter.reset('a');
    expect(await limiter.check({ identity: 'a' })).toMatchObject({ source: 'store', remaining: 1 });
    expect(store.calls).toHaveLength(3);
  });

  it('a reset while the store is down clears the in-process state too', async () => {
    const { limiter, store } = setup([local], { breaker: false });
    store.behaviour = 'error';
    for (let i = 0; i < 2; i++) await limiter.check({ identity: 'a' });
    expect(await limiter.check({ identity: 'a' })).toMatchObject({ allowed: false, source: 'local' });
    await limiter.reset('a');
    expect(await limiter.check({ identity: 'a' })).toMatchObject({
      allowed: true,
      source: 'local',
      remaining: 1,
    });
  });
});

describe('the decision: which policy leads', () => {
  it('an unavailable closed policy leads over a real limit that comes before it', async () => {
    const local: PolicyInput = { name: 'local', burst: 1, rate: '1/m', failMode: 'local' };
    const closed: PolicyInput = { name: 'strict', limit: 10, window: '1s', failMode: 'closed' };
    const { limiter, store } = setup([local, closed], { breaker: false });
    store.behaviour = 'error';
    expect(await limiter.check({ identity: 'a', policies: ['local'] })).toMatchObject({ allowed: true });
    const d = await limiter.check({ identity: 'a' });
    expect(d.results.map((r) => [r.policy, r.outcome])).toEqual([
      ['local', 'over_limit'],
      ['strict', 'unavailable'],
    ]);
    expect(d).toMatchObject({ allowed: false, outcome: 'unavailable', policy: 'strict', retryAfterMs: 0 });
  });

  it('among several unavailable closed policies the first leads; a real limit after them never does', () => {
    const policy = (name: string): CompiledPolicy => definePolicy({ name, limit: 10, window: '1s' });
    const denied = (name: string, retryAfterMs: number) =>
      resultFromVerdict(policy(name), 1, { allowed: false, remaining: 0, resetMs: 1000, retryAfterMs });
    const d = buildDecision(
      [
        unavailableResult(policy('first'), 1, false),
        unavailableResult(policy('second'), 1, false),
        denied('limit', 5000),
      ],
      'fail-closed',
    );
    expect(d).toMatchObject({ allowed: false, outcome: 'unavailable', policy: 'first', retryAfterMs: 0 });
  });

  it('on a tie, the first policy leads: the same wait when denied, the same units left when admitted', async () => {
    const a: PolicyInput = { name: 'a', limit: 2, window: '1s' };
    const b: PolicyInput = { name: 'b', limit: 2, window: '1s' };
    const { limiter } = setup([a, b]);
    const seen = [];
    for (let i = 0; i < 3; i++) seen.push(await limiter.check({ identity: 'x' }));
    expect(seen.map((d) => [d.allowed, d.policy, d.remaining])).toEqual([
      [true, 'a', 1],
      [true, 'a', 0],
      [false, 'a', 0],
    ]);
    const [ra, rb] = seen[2]!.results;
    expect(ra!.retryAfterMs).toBeGreaterThan(0);
    expect(rb!.retryAfterMs).toBe(ra!.retryAfterMs);
    expect(seen[2]!.retryAfterMs).toBe(ra!.retryAfterMs);
    // The decision's reset is its lead policy's.
    expect(seen[0]!.resetMs).toBeGreaterThan(0);
    expect(seen[0]!.resetMs).toBe(seen[0]!.results[0]!.resetMs);
  });
});

describe('the decision event', () => {
  it('reports the time the check took, measured around it', async () => {
    const { limiter, store, events } = setup([{ name: 'p', limit: 5, window: '1s', failMode: 'open' }]);
    store.behaviour = 'hang';
    const before = performance.now();
    await limiter.check({ identity: 'a' });
    const tookMs = performance.now() - before;
    // A deadline miss: at least the 20 ms deadline, never more than the whole call.
    expect(events[0]!.durationMs).toBeGreaterThanOrEqual(20);
    expect(events[0]!.durationMs).toBeLessThanOrEqual(tookMs);
  });
});

describe('limiter.peek and limiter.reset', () => {
  it('peek takes no request id, so even one check would refuse is ignored', async () => {
    const { limiter } = setup([{ name: 'p', limit: 5, window: '1s' }]);
    expect(await limiter.peek({ identity: 'a', requestId: '' })).toMatchObject({
      allowed: true,
      remaining: 5,
    });
    await expect(limiter.check({ identity: 'a', requestId: '' })).rejects.toThrow(TypeError);
  });

  it('a reset of every policy forgets a deny-cache entry of one of them', async () => {
    const one: PolicyInput = { name: 'one', limit: 1, window: '1m' };
    const two: PolicyInput = { name: 'two', limit: 5, window: '1m' };
    const { limiter, store } = setup([one, two]);
    await limiter.check({ identity: 'a', policies: ['one'] });
    expect(await limiter.check({ identity: 'a', policies: ['one'] })).toMatchObject({ source: 'store' });
    expect(await limiter.check({ identity: 'a', policies: ['one'] })).toMatchObject({ source: 'deny-cache' });
    await limiter.reset('a');
    expect(await limiter.check({ identity: 'a', policies: ['one'] })).toMatchObject({
      allowed: true,
      source: 'store',
    });
    expect(store.calls).toHaveLength(3);
  });

  it('a reset gets at least 1 s, even under a shorter timeoutMs', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'performance'] });
    try {
      let finish!: () => void;
      const slow: Store = {
        kind: 'slow',
        decide: () => Promise.resolve([]),
        reset: () => new Promise<void>((resolve) => (finish = resolve)),
      };
      const limiter = createLimiter({
        policies: [{ name: 'p', limit: 5, window: '1s' }],
        store: slow,
        timeoutMs: 20,
      });
      let outcome: unknown = 'pending';
      limiter.reset('a').then(
        () => (outcome = 'done'),
        (e: unknown) => (outcome = e),
      );
      await vi.advanceTimersByTimeAsync(999);
      expect(outcome).toBe('pending');
      finish();
      await vi.advanceTimersByTimeAsync(0);
      expect(outcome).toBe('done');

      const hung: Store = { ...slow, reset: () => new Promise<void>(() => {}) };
      const stuck = createLimiter({
        policies: [{ name: 'p', limit: 5, window: '1s' }],
        store: hung,
        timeoutMs: 20,
      });
      let failed: unknown;
      stuck.reset('a').catch((e: unknown) => (failed = e));
      await vi.advanceTimersByTimeAsync(999);
      expect(failed).toBeUndefined();
      await vi.advanceTimersByTimeAsync(10);
      expect(failed).toBeInstanceOf(StoreTimeoutError);
      expect(failed).toMatchObject({
        name: 'StoreTimeoutError',
        message: 'store did not answer within 1000 ms',
      });
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('LIMITER_DEFAULTS', () => {
  it('are the option defaults of createLimiter', () => {
    expect(LIMITER_DEFAULTS).toEqual({
      prefix: OPTION_DEFAULTS.prefix,
      timeoutMs: OPTION_DEFAULTS.timeoutMs,
      failureThreshold: OPTION_DEFAULTS.failureThreshold,
      cooldownMs: OPTION_DEFAULTS.cooldownMs,
      denyCacheMaxKeys: OPTION_DEFAULTS.denyCacheMaxKeys,
      denyCacheMaxAgeMs: OPTION_DEFAULTS.denyCacheMaxAgeMs,
      localFallbackMaxKeys: OPTION_DEFAULTS.localFallbackMaxKeys,
      idempotencyTtlMs: OPTION_DEFAULTS.idempotencyTtlMs,
      maxWaiting: OPTION_DEFAULTS.maxWaiting,
    });
    expect(Object.isFrozen(LIMITER_DEFAULTS)).toBe(true);
  });
});

describe('programmer errors outside the descriptor fields', () => {
  const policies: PolicyInput[] = [{ name: 'p', limit: 5, window: '1s' }];

  it.each([
    ['check', null, 'limiter.check: the descriptor must be an object, got null'],
    ['check', 'alice', 'limiter.check: the descriptor must be an object, got "alice"'],
    ['peek', undefined, 'limiter.peek: the descriptor must be an object, got undefined'],
    [
      'peek',
      { identity: 'a', policies: ['nope'] },
      'limiter.peek: unknown policy "nope" in "policies" (known: p)',
    ],
  ] as const)('limiter.%s(%j) rejects with the method named', async (method, descriptor, message) => {
    const { limiter, store } = setup(policies);
    await expect(limiter[method](descriptor as never)).rejects.toThrow(new TypeError(message));
    expect(store.calls).toHaveLength(0);
  });

  it('onDecision takes only a function', () => {
    const { limiter } = setup(policies);
    expect(() => limiter.onDecision('log' as never)).toThrow(
      new TypeError('limiter.onDecision: the listener must be a function, got "log"'),
    );
  });

  it('createLimiter takes only an options object', () => {
    expect(() => createLimiter(null as never)).toThrow(
      'createLimiter: "options" must be an object, got null',
    );
    expect(() => createLimiter('x' as never)).toThrow('createLimiter: "options" must be an object, got "x"');
  });

  it('limiter.policy names the known policies for an unknown name', () => {
    const { limiter } = setup([...policies, { name: 'q', limit: 1, window: '1s' }]);
    expect(limiter.policy('q').name).toBe('q');
    expect(() => limiter.policy('r')).toThrow(new TypeError('limiter: unknown policy "r" (known: p, q)'));
  });
});

describe('more edges', () => {
  const local: PolicyInput = { name: 'local', burst: 2, rate: '1/s', failMode: 'local' };

  it('liveEvictions adds the local fallback evictions to a store without a count of its own', async () => {
    const { limiter, store } = setup([local], { breaker: false, localFallback: { maxKeys: 1 } });
    store.behaviour = 'error';
    await limiter.check({ identity: 'a' });
    await limiter.check({ identity: 'b' });
    expect(limiter.liveEvictions).toBe(1);
  });

  it('a breaker closed by a successful probe probes again after its next opening', () => {
    let now = T0;
    const breaker = new CircuitBreaker(1, 1000, () => now);
    breaker.failure(breaker.permit());
    now += 1000;
    expect(breaker.permit()).toBe('probe');
    breaker.success();
    expect([breaker.state, breaker.permit()]).toEqual(['closed', 'call']);
    breaker.failure('call');
    expect(breaker.state).toBe('open');
    now += 1000;
    expect(breaker.state).toBe('half-open');
    expect(breaker.permit()).toBe('probe');
  });

  it('a StoreTimeoutError carries the brand isStoreTimeoutError reads', () => {
    expect(isStoreTimeoutError(new StoreTimeoutError(5))).toBe(true);
    expect(isStoreTimeoutError(new Error('store did not answer within 5 ms'))).toBe(false);
  });

  it('reset rejects an identity that is not one', async () => {
    const { limiter } = setup([local]);
    await expect(limiter.reset(42 as never)).rejects.toThrow(
      new TypeError(
        `limiter.reset: "identity" must be a string or { kind: 'ip' | 'key' | 'app', value: string }, got 42`,
      ),
    );
  });

  it('takes the deny cache maxAgeMs from the options', async () => {
    const { limiter, clock } = setup([{ name: 'h', limit: 1, window: '1h' }], {
      denyCache: { maxAgeMs: 200 },
    });
    await limiter.check({ identity: 'a' });
    await limiter.check({ identity: 'a' });
    expect((await limiter.check({ identity: 'a' })).source).toBe('deny-cache');
    clock.now += 199;
    expect((await limiter.check({ identity: 'a' })).source).toBe('deny-cache');
    clock.now += 1;
    expect((await limiter.check({ identity: 'a' })).source).toBe('store');
  });

  it('an idempotent check on a store that answers in-process replays its decision', async () => {
    const clock = { now: T0 };
    const tick = () => clock.now;
    const limiter = createLimiter({
      policies: [{ name: 'p', limit: 3, window: '1m' }],
      store: new MemoryStore({ clock: tick }),
      clock: tick,
    });
    const first = await limiter.check({ identity: 'a', requestId: 'r1' });
    const again = await limiter.check({ identity: 'a', requestId: 'r1' });
    expect([first.remaining, again.remaining]).toEqual([2, 2]);
    expect((await limiter.check({ identity: 'a' })).remaining).toBe(1);
  });

  it('a reset of one policy forgets a deny-cache entry for a set of several keys holding it', async () => {
    const one: PolicyInput = { name: 'one', limit: 1, window: '1m' };
    const two: PolicyInput = { name: 'two', limit: 5, window: '1m' };
    const { limiter } = setup([one, two]);
    await limiter.check({ identity: 'a' });
    await limiter.check({ identity: 'a' });
    expect((await limiter.check({ identity: 'a' })).source).toBe('deny-cache');
    await limiter.reset('a', 'one');
    expect(await limiter.check({ identity: 'a' })).toMatchObject({ allowed: true, source: 'store' });
  });
});
