/**
 * Script calls of a leased policy on a real Redis (counted in Redis's own INFO commandstats),
 * against the same policy unleased on the same checks: a burst of 1,000 checks at once on a fresh
 * key, and a hot key checked one request after another. A leased policy
 * never makes more script calls than unleased, and on a hot key far fewer.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { createLimiter } from '../../packages/core/src/limiter/create-limiter.js';
import { DECIDE_SCRIPT } from '../../packages/core/src/redis/script.js';
import { RedisStore } from '../../packages/core/src/stores/redis-store.js';
import type { Decision, PolicyInput } from '../../packages/core/src/types.js';
import { useRedis } from '../support/redis-fixture.js';
import { scriptCalls } from '../support/script-calls.js';

const redis = useRedis();

beforeEach(async () => {
  await redis.admin.flushall();
  // Loaded up front, so every call of the limiter is one EVALSHA (no NOSCRIPT fallback to count).
  await redis.admin.script('LOAD', DECIDE_SCRIPT.source);
});

/** The example apps' `leased` policy: burst 100, 10/s, 10 units a lease for at most 1 s. */
const LEASED: PolicyInput = {
  name: 'leased',
  algorithm: 'token-bucket',
  burst: 100,
  rate: '10/s',
  lease: { units: 10, ttlMs: 1000 },
};

/** `policy` without its lease. */
const unleased = ({ lease: _lease, ...policy }: PolicyInput): PolicyInput => policy;

/** Runs `checks` on a new limiter of `policy` (its own prefix): the decisions and the script calls they made. */
async function measured(
  policy: PolicyInput,
  checks: (check: () => Promise<Decision>) => Promise<Decision[]>,
): Promise<{ decisions: Decision[]; calls: number; admitted: number }> {
  const limiter = createLimiter({
    policies: [policy],
    prefix: `p${Math.random().toString(36).slice(2)}`,
    store: new RedisStore({ client: redis.client }),
  });
  const before = await scriptCalls(redis.admin);
  const decisions = await checks(() => limiter.check({ identity: 'tenant' }));
  const calls = (await scriptCalls(redis.admin)) - before;
  return { decisions, calls, admitted: decisions.filter((d) => d.allowed).length };
}

/** `count` checks at once. */
const atOnce = (count: number) => (check: () => Promise<Decision>) =>
  Promise.all(Array.from({ length: count }, check));

/** `count` checks, each after the one before is answered. */
const oneByOne = (count: number) => async (check: () => Promise<Decision>) => {
  const decisions: Decision[] = [];
  for (let i = 0; i < count; i++) decisions.push(await check());
  return decisions;
};

describe('leased script calls on Redis, against the same policy unleased', () => {
  it('1,000 checks at once on a fresh key: no more script calls than unleased, about one per lease', async () => {
    const leased = await measured(LEASED, atOnce(1000));
    const plain = await measured(unleased(LEASED), atOnce(1000));
    console.log(
      `1,000 at once, fresh key: leased ${leased.calls} script calls for ${leased.admitted} admitted, ` +
        `unleased ${plain.calls} for ${plain.admitted}`,
    );
    expect(leased.admitted).toBeGreaterThanOrEqual(100);
    expect(leased.calls).toBeLessThanOrEqual(plain.calls);
    // The first check exact, 10 takes of 10, then about one denied take per unit refilled meanwhile.
    const seconds = 1 + leased.decisions.length / 1000;
    expect(leased.calls).toBeLessThanOrEqual(1 + 100 / 10 + 2 * (1 + 10 * seconds));
  });

  it('a hot key checked 500 times one after another, all admitted: a tenth of the script calls', async () => {
    const hot: PolicyInput = { ...LEASED, burst: 1000 };
    const leased = await measured(hot, oneByOne(500));
    const plain = await measured(unleased(hot), oneByOne(500));
    console.log(
      `500 one by one, hot key: leased ${leased.calls} script calls for ${leased.admitted} admitted, ` +
        `unleased ${plain.calls} for ${plain.admitted}`,
    );
    expect(leased.admitted).toBe(500);
    expect(plain.calls).toBe(500);
    // The first check exact, then one take of 10 per 10 admissions.
    expect(leased.calls).toBeLessThanOrEqual(1 + 500 / 10);
  });
});
