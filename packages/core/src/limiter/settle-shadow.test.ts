import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { useRedis } from '../../../../test/support/redis-fixture.js';
import { MemoryStore } from '../stores/memory-store.js';
import { RedisStore } from '../stores/redis-store.js';
import type { Algorithm, Clock, PolicyInput, Store } from '../types.js';
import { createLimiter } from './create-limiter.js';

const fixture = useRedis();
let run = 0;

/** A store on `clock`: MemoryStore, or RedisStore at the clock's explicit time. */
const STORES = [
  ['MemoryStore', (clock: Clock): Store => new MemoryStore({ clock })],
  ['RedisStore', (clock: Clock): Store => new RedisStore({ client: fixture.client, clock })],
] as const;

const TOKENS: PolicyInput = { name: 'tokens', algorithm: 'token-bucket', burst: 1000, rate: '10/s' };
const PROBE: PolicyInput = { name: 'probe', algorithm: 'fixed-window', limit: 1, window: '1h', shadow: true };

describe.each(STORES)('settle beside a shadow policy on %s', (_name, storeOf) => {
  /** Units spent by `requests` that each reserve 100 and use 1000, 10 s apart, and the tokens left after each. */
  async function spend(policies: PolicyInput[], requests: number) {
    let now = 1_764_400_000_500;
    const clock = () => now;
    const limiter = createLimiter({
      policies,
      clock,
      store: storeOf(clock),
      prefix: `sh${++run}`,
      timeoutMs: 5000,
    });
    let spent = 0;
    const left: (number | undefined)[] = [];
    for (let i = 0; i < requests; i++, now += 10_000) {
      const d = await limiter.check({ identity: 'u', cost: { tokens: 100 }, reserve: true });
      if (d.allowed) {
        expect(await limiter.settle(d, { tokens: 1000 })).toBe('settled');
        spent += 1000;
      }
      left.push(
        (await limiter.peek({ identity: 'u' })).results.find((r) => r.policy === 'tokens')?.remaining,
      );
    }
    return { spent, left };
  }

  it('spends what it spends without the shadow policy (reserve 100, use 1000, a shadow limit of 1)', async () => {
    const alone = await spend([TOKENS], 20);
    const beside = await spend([TOKENS, PROBE], 20);
    expect(alone.spent).toBe(3000);
    expect(beside).toEqual(alone);
  });

  it('undoes exactly what a check charged with a settle of 0 at once, whatever the mix of shadow and enforced policies', async () => {
    const algorithmArb = fc.constantFrom<Algorithm>(
      'token-bucket',
      'gcra',
      'fixed-window',
      'sliding-window',
      'sliding-log',
    );
    const policyArb = fc.record({
      algorithm: algorithmArb,
      limit: fc.integer({ min: 1, max: 6 }),
      shadow: fc.boolean(),
      used: fc.integer({ min: 0, max: 6 }),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(policyArb, { minLength: 1, maxLength: 4 }), async (specs) => {
        const clock = () => 1_764_400_000_500;
        const policies: PolicyInput[] = specs.map((s, i) => ({
          name: `p${i}`,
          algorithm: s.algorithm,
          limit: s.limit,
          window: '1m',
          shadow: s.shadow,
        }));
        const limiter = createLimiter({
          policies,
          clock,
          store: storeOf(clock),
          prefix: `mix${++run}`,
          timeoutMs: 5000,
        });
        // Each policy used alone first, so any of them may deny the check below.
        for (const [i, s] of specs.entries()) {
          for (let k = 0; k < s.used; k++) await limiter.check({ identity: 'u', policies: [`p${i}`] });
        }
        const remaining = async () => (await limiter.peek({ identity: 'u' })).results.map((r) => r.remaining);
        const before = await remaining();
        const d = await limiter.check({ identity: 'u', reserve: true });
        const charged = (await remaining()).some((r, i) => r !== before[i]);
        const answer = await limiter.settle(d, 0);
        expect(answer).toBe(d.allowed && charged ? 'settled' : 'noop');
        expect(await remaining()).toEqual(before);
      }),
      { numRuns: storeOf === STORES[0][1] ? 150 : 40 },
    );
  });
});
