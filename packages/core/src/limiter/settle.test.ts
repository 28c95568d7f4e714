import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisProcess, startRedis } from '../../../../test/support/redis-server.js';
import { MemoryStore } from '../stores/memory-store.js';
import { RedisStore } from '../stores/redis-store.js';
import type { Decision, PolicyInput, Store } from '../types.js';
import { createLimiter } from './create-limiter.js';
import { SwitchableStore } from './test-stores.test-support.js';

/** A frozen clock, moved by hand; away from any window boundary. */
function frozenClock(start = 1_764_400_000_500) {
  let now = start;
  const clock = () => now;
  return Object.assign(clock, { advance: (ms: number) => (now += ms) });
}

const TOKENS: PolicyInput = { name: 'tokens', algorithm: 'token-bucket', burst: 1000, rate: '10/s' };
const LOGINS: PolicyInput = { name: 'logins', algorithm: 'fixed-window', limit: 5, window: '1m' };

function limiterWith(policies: PolicyInput[], store?: Store, clock = frozenClock()) {
  return { clock, limiter: createLimiter({ policies, clock, store: store ?? new MemoryStore({ clock }) }) };
}

const remainingOf = (d: Decision, policy: string) => d.results.find((r) => r.policy === policy)?.remaining;

describe('limiter.settle', () => {
  it('settles a reserved check to the units used, once', async () => {
    const { limiter } = limiterWith([TOKENS]);
    const d = await limiter.check({ identity: 'u', cost: 100, reserve: true });
    expect(d.remaining).toBe(900);
    expect(await limiter.settle(d, 10)).toBe('settled');
    expect((await limiter.peek({ identity: 'u' })).remaining).toBe(990);
    // Settling twice changes nothing.
    expect(await limiter.settle(d, 0)).toBe('noop');
    expect(await limiter.settle(d, 500)).toBe('noop');
    expect((await limiter.peek({ identity: 'u' })).remaining).toBe(990);
  });

  it('settles a decision made before updatePolicies, through the layers composed by it', async () => {
    const { limiter } = limiterWith([TOKENS]);
    const d = await limiter.check({ identity: 'u', cost: 100, reserve: true });
    limiter.updatePolicies([{ ...TOKENS, failMode: 'open' }]);
    expect(await limiter.settle(d, 10)).toBe('settled');
    expect((await limiter.peek({ identity: 'u' })).remaining).toBe(990);
    expect(await limiter.settle(d, 10)).toBe('noop');
  });

  it('lets fifty requests that reserve 100 and use 10 pass in a row (burst 1000)', async () => {
    const { limiter } = limiterWith([TOKENS]);
    for (let i = 0; i < 50; i++) {
      const d = await limiter.check({ identity: 'u', cost: 100, reserve: true });
      expect(d.allowed, `request ${i}`).toBe(true);
      await limiter.settle(d, 10);
    }
    // Without the settle the eleventh would have been denied.
    const { limiter: plain } = limiterWith([TOKENS]);
    for (let i = 0; i < 10; i++) await plain.check({ identity: 'u', cost: 100 });
    expect((await plain.check({ identity: 'u', cost: 100 })).allowed).toBe(false);
  });

  it('charges above the reservation, so later checks wait for the debt', async () => {
    const { limiter, clock } = limiterWith([TOKENS]);
    const d = await limiter.check({ identity: 'u', cost: 1000, reserve: true });
    expect(await limiter.settle(d, 1200)).toBe('settled');
    const denied = await limiter.check({ identity: 'u' });
    expect(denied.allowed).toBe(false);
    // 200 units of debt and one unit to earn at 10/s.
    expect(denied.retryAfterMs).toBe(20_100);
    clock.advance(20_100);
    expect((await limiter.check({ identity: 'u' })).allowed).toBe(true);
  });

  it('settles each policy of a multi-policy check by its own units; a policy not named keeps its reservation', async () => {
    const { limiter } = limiterWith([TOKENS, LOGINS]);
    const d = await limiter.check({ identity: 'u', cost: { tokens: 100, logins: 1 }, reserve: true });
    expect(await limiter.settle(d, { logins: 0 })).toBe('settled');
    const after = await limiter.peek({ identity: 'u' });
    expect(remainingOf(after, 'tokens')).toBe(900);
    expect(remainingOf(after, 'logins')).toBe(5);
  });

  it('does nothing for a decision that reserved nothing: no reserve or denied', async () => {
    const shadow: PolicyInput = {
      name: 'probe',
      algorithm: 'fixed-window',
      limit: 1,
      window: '1m',
      shadow: true,
    };
    const { limiter } = limiterWith([TOKENS, shadow]);
    const plain = await limiter.check({ identity: 'a', cost: { tokens: 100 } });
    expect(await limiter.settle(plain, 0)).toBe('noop');
    expect(remainingOf(await limiter.peek({ identity: 'a' }), 'tokens')).toBe(900);
    const first = await limiter.check({ identity: 'b', cost: { tokens: 100 }, reserve: true });
    const shadowed = await limiter.check({ identity: 'b', cost: { tokens: 100 }, reserve: true });
    expect(shadowed.shadowed).toBe(true);
    // Only the shadow policy denied: the enforced one was charged, and its settle applies.
    expect(await limiter.settle(shadowed, 0)).toBe('settled');
    expect(remainingOf(await limiter.peek({ identity: 'b' }), 'tokens')).toBe(900);
    expect(await limiter.settle(first, { tokens: 0 })).toBe('settled');
    expect(remainingOf(await limiter.peek({ identity: 'b' }), 'tokens')).toBe(1000);
    const denied = await limiter.check({ identity: 'c', cost: { tokens: 1000 }, reserve: true });
    expect(await limiter.settle(denied, 0)).toBe('settled');
    const over = await limiter.check({ identity: 'c', cost: { tokens: 1000 }, reserve: true });
    expect(over.allowed).toBe(true);
    const denied2 = await limiter.check({ identity: 'c', cost: { tokens: 1000 }, reserve: true });
    expect(denied2.allowed).toBe(false);
    expect(await limiter.settle(denied2, 0)).toBe('noop');
  });

  it('is a no-op for fail-open and fail-closed decisions, and settles a local decision locally', async () => {
    const clock = frozenClock();
    const store = new SwitchableStore(clock);
    const policies: PolicyInput[] = [
      { ...TOKENS, name: 'open', failMode: 'open' },
      { ...TOKENS, name: 'local', failMode: 'local' },
    ];
    const limiter = createLimiter({ policies, clock, store, breaker: false });
    store.behaviour = 'error';
    const open = await limiter.check({ identity: 'u', cost: 100, reserve: true, policies: ['open'] });
    expect(open.source).toBe('fail-open');
    expect(await limiter.settle(open, 0)).toBe('noop');
    const local = await limiter.check({ identity: 'u', cost: 100, reserve: true, policies: ['local'] });
    expect(local.source).toBe('local');
    expect(local.remaining).toBe(900);
    expect(await limiter.settle(local, 0)).toBe('settled');
    expect((await limiter.check({ identity: 'u', cost: 1, policies: ['local'] })).remaining).toBe(999);
    const closed = createLimiter({ policies: [TOKENS], clock, store, breaker: false });
    const failed = await closed.check({ identity: 'u', cost: 100, reserve: true });
    expect(failed.source).toBe('fail-closed');
    expect(await closed.settle(failed, 0)).toBe('noop');
  });

  it('reports a store that fails or hangs during the settle as unavailable, never a rejection', async () => {
    const clock = frozenClock();
    const store = new SwitchableStore(clock);
    const limiter = createLimiter({ policies: [TOKENS], clock, store, timeoutMs: 20, breaker: false });
    const a = await limiter.check({ identity: 'u', cost: 100, reserve: true });
    const b = await limiter.check({ identity: 'u', cost: 100, reserve: true });
    store.behaviour = 'error';
    expect(await limiter.settle(a, 0)).toBe('unavailable');
    store.behaviour = 'hang';
    expect(await limiter.settle(b, 0)).toBe('unavailable');
    store.behaviour = 'up';
    expect((await limiter.peek({ identity: 'u' })).remaining).toBe(800);
  });

  it('answers unavailable without calling the store while the breaker is open', async () => {
    const clock = frozenClock();
    const store = new SwitchableStore(clock);
    const limiter = createLimiter({
      policies: [{ ...TOKENS, failMode: 'open' }],
      clock,
      store,
      breaker: { failureThreshold: 1, cooldownMs: 10_000 },
    });
    const d = await limiter.check({ identity: 'u', cost: 100, reserve: true });
    store.behaviour = 'error';
    await limiter.check({ identity: 'u' });
    expect(limiter.breakerState).toBe('open');
    store.behaviour = 'up';
    expect(await limiter.settle(d, 0)).toBe('unavailable');
    expect((await store.inner.decide([], 'peek')).length).toBe(0);
    expect((await limiter.peek({ identity: 'u' })).results[0]?.outcome).toBe('unavailable');
  });

  it('drops a deny-cache entry that a refund made stale', async () => {
    const { limiter } = limiterWith([TOKENS]);
    const a = await limiter.check({ identity: 'u', cost: 800, reserve: true });
    const denied = await limiter.check({ identity: 'u', cost: 500 });
    expect(denied.allowed).toBe(false);
    expect((await limiter.check({ identity: 'u', cost: 500 })).source).toBe('deny-cache');
    await limiter.settle(a, 0);
    const again = await limiter.check({ identity: 'u', cost: 500 });
    expect(again).toMatchObject({ allowed: true, source: 'store' });
  });

  it('rejects bad units with a TypeError naming the value, and keeps the reservation', async () => {
    const sliding: PolicyInput = { name: 'log', algorithm: 'sliding-log', limit: 10, window: '1m' };
    const { limiter } = limiterWith([TOKENS, sliding]);
    const d = await limiter.check({ identity: 'u', cost: { tokens: 100, log: 2 }, reserve: true });
    await expect(limiter.settle(d, -1)).rejects.toThrow(
      'limiter.settle: "units" must be a number >= 0 or a record of them by policy name, got -1',
    );
    await expect(limiter.settle(d, Number.NaN)).rejects.toThrow('got NaN');
    await expect(limiter.settle(d, '5' as never)).rejects.toThrow('got "5"');
    await expect(limiter.settle(d, Number.POSITIVE_INFINITY)).rejects.toThrow('got Infinity');
    await expect(limiter.settle(d, { tokens: -2 })).rejects.toThrow(
      '"units.tokens" must be a number >= 0, got -2',
    );
    await expect(limiter.settle(d, { other: 1 })).rejects.toThrow('names policy "other"');
    await expect(limiter.settle(d, { log: 0.5 })).rejects.toThrow(
      '"units" for policy "log" (sliding-log) must be a whole number, got 0.5',
    );
    await expect(limiter.settle(null as never, 1)).rejects.toThrow(TypeError);
    await expect(limiter.check({ identity: 'u', reserve: 'yes' as never })).rejects.toThrow(
      'limiter.check: "reserve" must be a boolean, got "yes"',
    );
    expect(await limiter.settle(d, { tokens: 0, log: 0 })).toBe('settled');
    const after = await limiter.peek({ identity: 'u' });
    expect([remainingOf(after, 'tokens'), remainingOf(after, 'log')]).toEqual([1000, 10]);
  });
});

describe('limiter.settle on Redis', () => {
  let server: RedisProcess;
  let redis: Redis;
  beforeAll(async () => {
    server = await startRedis();
    redis = new Redis(server.port, '127.0.0.1', { maxRetriesPerRequest: 1 });
  });
  afterAll(async () => {
    redis?.disconnect();
    await server?.stop();
  });

  it('settles through the settle script, the keys of every policy in one call', async () => {
    const limiter = createLimiter({
      policies: [TOKENS, LOGINS],
      store: new RedisStore({ client: redis }),
      timeoutMs: 5000,
    });
    const d = await limiter.check({ identity: 'r1', cost: { tokens: 300, logins: 1 }, reserve: true });
    expect(d.source).toBe('store');
    const monitor = await redis.monitor();
    const calls: string[] = [];
    monitor.on('monitor', (_t: string, args: string[]) => {
      if (/^eval/i.test(args[0] ?? '')) calls.push(args[2] as string);
    });
    expect(await limiter.settle(d, { tokens: 30, logins: 0 })).toBe('settled');
    await redis.ping();
    monitor.disconnect();
    // One call with both keys (EVALSHA; then EVAL when the server did not have the script yet).
    expect(calls.length).toBeGreaterThan(0);
    expect(calls.every((keys) => keys === '2')).toBe(true);
    const after = await limiter.peek({ identity: 'r1' });
    expect(remainingOf(after, 'tokens')).toBeGreaterThanOrEqual(970);
    expect(remainingOf(after, 'logins')).toBe(5);
  });

  it("finds a sliding log reservation's record by Redis TIME: every refund of a reserve-and-settle lands", async () => {
    const limiter = createLimiter({
      policies: [{ name: 'logins', algorithm: 'sliding-log', limit: 5, window: '1m' }],
      store: new RedisStore({ client: redis }),
      timeoutMs: 5000,
    });
    for (let i = 0; i < 20; i++) {
      const d = await limiter.check({ identity: 'r3', reserve: true });
      expect(d.allowed, `request ${i}`).toBe(true);
      expect(await limiter.settle(d, 0), `request ${i}`).toBe('settled');
    }
    expect((await limiter.peek({ identity: 'r3' })).remaining).toBe(5);
  });

  it('answers unavailable when Redis is gone, without a rejection', async () => {
    const client = new Redis(server.port, '127.0.0.1');
    const limiter = createLimiter({
      policies: [{ ...TOKENS, failMode: 'open' }],
      store: new RedisStore({ client }),
      timeoutMs: 5000,
    });
    const d = await limiter.check({ identity: 'r2', cost: 300, reserve: true });
    expect(d.source).toBe('store');
    await client.quit();
    expect(await limiter.settle(d, 0)).toBe('unavailable');
  });
});
