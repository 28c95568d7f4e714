/**
 * A concurrency denial is not remembered by the deny cache: a slot comes free when a response
 * ends, at no time the denial could tell, so the next check after a release must reach the store.
 */
import { describe, expect, it } from 'vitest';
import { createLimiter } from '../../packages/core/src/limiter/create-limiter.js';
import { MemoryStore } from '../../packages/core/src/stores/memory-store.js';

describe('the deny cache and a concurrency policy', () => {
  it('a check after a release is admitted although the check before it was denied', async () => {
    const now = 1_800_000_000_000;
    const clock = () => now;
    // The deny cache on, with its defaults, as every app runs it.
    const limiter = createLimiter({
      policies: [{ name: 'in-flight', algorithm: 'concurrency', limit: 1, leaseMs: '10s' }],
      store: new MemoryStore({ clock }),
      clock,
    });
    const held = await limiter.check({ identity: 'tenant' });
    expect(held.allowed).toBe(true);
    const denied = await limiter.check({ identity: 'tenant' });
    expect(denied.outcome).toBe('over_limit');
    await limiter.release(held);
    const next = await limiter.check({ identity: 'tenant' });
    expect(next.source).not.toBe('deny-cache');
    expect(next.allowed).toBe(true);
    await limiter.close();
  });
});
