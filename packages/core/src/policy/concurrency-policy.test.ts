import { describe, expect, it } from 'vitest';
import { ALGORITHMS } from '../algorithms/registry.js';
import { DenialMemory, deniedFromMemory, longestWaitMs, rememberDenied } from '../limiter/denial-memory.js';
import { OPTION_DEFAULTS } from '../options/defaults.js';
import type { PolicyInput } from '../types.js';
import { definePolicy } from './define-policy.js';
import { PolicyError } from './errors.js';
import { POLICY_DEFAULTS } from './index.js';

const base = { name: 'in-flight', algorithm: 'concurrency', limit: 3 } as const;

/** The PolicyError `definePolicy` throws for `input`. */
function errorOf(input: PolicyInput): PolicyError {
  try {
    definePolicy(input);
  } catch (error) {
    if (error instanceof PolicyError) return error;
    throw error;
  }
  throw new Error('definePolicy accepted the policy');
}

describe('a concurrency policy', () => {
  it('compiles limit and leaseMs to limit, windowMs = intervalMs = leaseMs, cost 1', () => {
    const p = definePolicy({ ...base, leaseMs: '10s', failMode: 'local', shadow: true, scope: 'route' });
    expect(p).toMatchObject({
      name: 'in-flight',
      algorithm: 'concurrency',
      limit: 3,
      windowMs: 10_000,
      intervalMs: 10_000,
      cost: 1,
      failMode: 'local',
      shadow: true,
      scope: 'route',
    });
    expect(Object.isFrozen(p)).toBe(true);
    expect(definePolicy(p)).toBe(p);
    expect(definePolicy({ ...base, cost: 1, leaseMs: 100 }).windowMs).toBe(100);
  });

  it('leases a slot for 30 s unless told otherwise', () => {
    expect(OPTION_DEFAULTS.concurrencyLeaseMs).toBe(30_000);
    expect(POLICY_DEFAULTS.leaseMs).toBe(30_000);
    expect(definePolicy(base).windowMs).toBe(30_000);
  });

  it.each([
    [{ limit: 0 }, 'limit', 'policy "in-flight": "limit" must be a positive integer, got 0'],
    [{ limit: 2.5 }, 'limit', '"limit" must be a positive integer, got 2.5'],
    [
      { limit: undefined },
      'limit',
      '"limit" is required (the most requests in flight at once), got undefined',
    ],
    [{ leaseMs: 99 }, 'leaseMs', '"leaseMs" must be at least 100 ms'],
    [{ leaseMs: '-1s' }, 'leaseMs', '"leaseMs" must be a duration'],
    [{ window: '1m' }, 'window', '"window" is not for a concurrency policy'],
    [{ rate: '10/s' }, 'rate', '"rate" is not for a concurrency policy'],
    [{ burst: 5 }, 'burst', '"burst" is not for a concurrency policy'],
    [{ lease: { units: 1, ttlMs: '1s' } }, 'lease', '"lease" is not for a concurrency policy'],
    [{ local: { burst: 1, rate: '1/s' } }, 'local', '"local" is not for a concurrency policy'],
    [{ ban: { blockMs: '1m' } }, 'ban', '"ban" is not for a concurrency policy'],
    [{ maxWaitMs: '1s' }, 'maxWaitMs', 'works with token-bucket and gcra (they reserve a turn)'],
    [{ cost: 2 }, 'cost', '"cost" must be 1 for a concurrency policy (a request holds one slot), got 2'],
    [{ cost: () => 1 }, 'cost', '"cost" must be 1 for a concurrency policy'],
    [{ failMode: 'lease' }, 'failMode', '"failMode" is for a policy with a lease'],
  ] as const)('refuses %o, naming %s, its value and why', (extra, field, message) => {
    const error = errorOf({ ...base, ...extra } as PolicyInput);
    expect(error.field).toBe(field);
    expect(error.policy).toBe('in-flight');
    expect(error.message).toContain(message);
  });

  it('gives leaseMs to concurrency policies only', () => {
    const error = errorOf({ name: 'rate', limit: 5, window: '1s', leaseMs: '10s' });
    expect(error.field).toBe('leaseMs');
    expect(error.message).toBe(
      `policy "rate": "leaseMs" is for concurrency policies (algorithm 'concurrency'); policy uses token-bucket, got "10s"`,
    );
  });

  it("tells a denial's wait within one lease, never resetting on a window boundary", () => {
    const p = definePolicy({ ...base, leaseMs: '10s' });
    expect(longestWaitMs(p.algorithm, p.windowMs)).toBe(10_000);
    expect(ALGORITHMS.concurrency.windows.resetsOnBoundary).toBe(false);
  });

  it('is never remembered by the deny cache: a slot may be released at any moment', () => {
    const policy = definePolicy({ ...base, leaseMs: '10s' });
    const memory = new DenialMemory(100, 60_000);
    const entries = [{ key: 'k', policy, cost: 1 }];
    const at = 1_000_000;
    expect(
      rememberDenied(
        memory,
        entries,
        [{ allowed: false, remaining: 0, resetMs: 9000, retryAfterMs: 400 }],
        at,
      ),
    ).toBe(false);
    expect(deniedFromMemory(memory, entries, at + 1)).toBeUndefined();
  });
});
