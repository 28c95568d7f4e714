/**
 * Policy names that are also names of Object.prototype's members (`constructor`, `toString`,
 * `__proto__`, `hasOwnProperty`) are ordinary names: a cost record or a settle units record that
 * does not name them leaves them at their own cost, on both stores.
 */
import { describe, expect, it } from 'vitest';
import { useRedis } from '../../../../test/support/redis-fixture.js';
import { MemoryStore } from '../stores/memory-store.js';
import { RedisStore } from '../stores/redis-store.js';
import type { Store } from '../types.js';
import { createLimiter } from './create-limiter.js';

const fixture = useRedis();
let run = 0;

const NAMES = ['constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf'] as const;

function limiterOn(kind: 'memory' | 'redis', name: string) {
  const clock = { now: 1_800_000_000_000 };
  const read = () => clock.now;
  const store: Store =
    kind === 'memory'
      ? new MemoryStore({ clock: read })
      : new RedisStore({ client: fixture.client, clock: read });
  return createLimiter({
    store,
    clock: read,
    prefix: `proto${++run}`,
    policies: [
      { name, algorithm: 'token-bucket', burst: 10, rate: '1/s' },
      { name: 'other', algorithm: 'token-bucket', burst: 100, rate: '1/s' },
    ],
  });
}

describe.each(['memory', 'redis'] as const)('policy names of Object.prototype members on %s', (kind) => {
  it.each(NAMES)('"%s": a cost record naming the other policy charges it its own cost', async (name) => {
    const limiter = limiterOn(kind, name);
    const decision = await limiter.check({ identity: 'a', cost: { other: 5 } });
    expect(decision.outcome).toBe('allowed');
    const byPolicy = Object.fromEntries(decision.results.map((r) => [r.policy, r.remaining]));
    expect(byPolicy[name]).toBe(9);
    expect(byPolicy.other).toBe(95);
  });

  it.each(NAMES)('"%s": a cost record naming it charges that cost', async (name) => {
    const limiter = limiterOn(kind, name);
    const decision = await limiter.check({ identity: 'a', cost: Object.fromEntries([[name, 4]]) });
    expect(decision.results.find((r) => r.policy === name)?.remaining).toBe(6);
  });

  it.each(NAMES)('"%s": settle units naming the other policy leave it its reservation', async (name) => {
    const limiter = limiterOn(kind, name);
    const decision = await limiter.check({ identity: 'a', cost: 3, reserve: true });
    expect(await limiter.settle(decision, { other: 1 })).toBe('settled');
    const after = await limiter.peek({ identity: 'a' });
    const byPolicy = Object.fromEntries(after.results.map((r) => [r.policy, r.remaining]));
    expect(byPolicy[name]).toBe(7);
    expect(byPolicy.other).toBe(99);
  });
});
