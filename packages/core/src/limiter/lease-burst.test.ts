/**
 * A burst of concurrent checks on one fresh leased key, on a store whose calls take time (each
 * call moves the injected clock on by its round trip before it answers): the checks short of
 * units wait for the key's take in flight, a denied take is remembered and answers every check
 * that waited for it, so the store is called about once per lease plus once per denied take,
 * never more than the same policy unleased on the same checks. The bounds still hold.
 */
import { describe, expect, it } from 'vitest';
import type { PolicyInput } from '../types.js';
import { createLimiter } from './create-limiter.js';
import { expectLeaseBounds, LEASED, T0 } from './lease-fleet.test-support.js';
import { SwitchableStore } from './test-stores.test-support.js';

/** The round trip of a store call on the injected clock (ms). */
const ROUND_TRIP_MS = 2;
/** Checks sent at once. */
const CHECKS = 1000;

/** `LEASED` without its lease: the same policy, every check decided by the store. */
const { lease: _lease, ...UNLEASED } = LEASED;

/**
 * A `SwitchableStore` with a round trip: the calls made in one turn of the event loop answer
 * together, `ROUND_TRIP_MS` later on `clock` (calls in flight at once overlap, as on a network).
 */
class RoundTripStore extends SwitchableStore {
  /** The round trip of the calls made in this turn, if one was made yet. */
  #trip: Promise<void> | undefined;

  constructor(private readonly clock: { nowMs: number }) {
    super(() => clock.nowMs);
  }

  override async decide(...args: Parameters<SwitchableStore['decide']>) {
    this.#trip ??= new Promise((resolve) => setImmediate(this.#arrive.bind(this, resolve)));
    await this.#trip;
    return super.decide(...args);
  }

  #arrive(resolve: () => void): void {
    this.#trip = undefined;
    this.clock.nowMs += ROUND_TRIP_MS;
    resolve();
  }
}

/** `CHECKS` checks of one fresh key at once on one limiter of `policy`: the decisions, the store calls. */
async function burst(policy: PolicyInput) {
  const clock = { nowMs: T0 };
  const store = new RoundTripStore(clock);
  const limiter = createLimiter({ policies: [policy], store, clock: () => clock.nowMs, breaker: false });
  /** The clock when each admitted check was answered, in order. */
  const admittedAt: number[] = [];
  const decisions = await Promise.all(
    Array.from({ length: CHECKS }, async () => {
      const decision = await limiter.check({ identity: 'fresh' });
      if (decision.allowed) admittedAt.push(clock.nowMs);
      return decision;
    }),
  );
  return { decisions, admittedAt, calls: store.calls.length };
}

describe('leases: a burst on a fresh key', () => {
  it('calls the store once per lease and once per denied take, never more than unleased', async () => {
    const leased = await burst(LEASED);
    const unleased = await burst(UNLEASED as PolicyInput);
    console.log(
      `${CHECKS} checks at once on a fresh key: ${leased.calls} store calls leased, ${unleased.calls} unleased`,
    );
    // Burst 20, 10/s: a unit comes back every 100 ms, longer than the whole burst takes.
    expect(leased.decisions.filter((d) => d.allowed)).toHaveLength(20);
    expect(unleased.decisions.filter((d) => d.allowed)).toHaveLength(20);
    // The first check is exact, then 4 takes of 5 spend the burst, then one denied take answers the rest.
    expect(leased.calls).toBeLessThanOrEqual(1 + 20 / 5 + 1);
    expect(leased.calls).toBeLessThanOrEqual(unleased.calls);
    expect(leased.decisions.filter((d) => d.source === 'lease').length).toBeGreaterThanOrEqual(CHECKS - 6);
  });

  it('keeps the bounds: never more than burst + rate x T from the fresh key, nor burst + rate x (T + ttl)', async () => {
    const { admittedAt } = await burst(LEASED);
    // An admission is charged before it is answered: the clock at its answer bounds it from above.
    expectLeaseBounds(admittedAt, { burst: 20, intervalMs: 100, ttlMs: 1000 });
  });
});
