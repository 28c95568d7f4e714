/**
 * Limiter instances sharing one store and one injected clock, for the lease tests. Test support
 * only; not exported from the package.
 */
import { expect } from 'vitest';
import type { PolicyInput } from '../types.js';
import { createLimiter, type Limiter } from './create-limiter.js';
import { SwitchableStore } from './test-stores.test-support.js';

/** The leased policy of the lease tests: a token bucket of 20 at 10/s, leased 5 units for 1 s. */
export const LEASED: PolicyInput = {
  name: 'leased',
  algorithm: 'token-bucket',
  burst: 20,
  rate: '10/s',
  lease: { units: 5, ttlMs: 1000 },
};

/**
 * Time a fast-check property over a fleet may take (ms): 60 runs of four limiters each take about a
 * second on a quiet 2-core machine and several times that in a full parallel run, past the 5 s
 * default.
 */
export const FLEET_PROPERTY_TIMEOUT_MS = 60_000;

/** The fleet's clock at the start (ms). */
export const T0 = 1_764_400_200_000;

/**
 * `instances` limiters of `policies` on one `SwitchableStore` (a MemoryStore that counts calls)
 * and one clock, breakers off; `denyCache: false` turns their deny caches off.
 */
export function leaseFleet(policies: PolicyInput[], instances: number, { denyCache = true } = {}) {
  const clock = { nowMs: T0 };
  const store = new SwitchableStore(() => clock.nowMs);
  const limiters: Limiter[] = Array.from({ length: instances }, () =>
    createLimiter({
      policies,
      store,
      clock: () => clock.nowMs,
      breaker: false,
      ...(!denyCache && { denyCache: false }),
    }),
  );
  /** Store calls that charge (takes and plain checks), not peeks. */
  const takes = () => store.calls.filter((c) => c.mode === 'consume').length;
  return { clock, store, limiters, takes };
}

/**
 * Asserts the bounds of docs/leases.md on the clock readings of a fleet's admissions, in order:
 * from a fresh key (at `T0`) never more than `burst + T / intervalMs`, and in any interval of
 * length T never more than `burst + (T + ttlMs) / intervalMs`. Every pair is compared in plain
 * arithmetic and `expect` runs only on a pair that breaks a bound (the same assertion and message):
 * thousands of `expect` calls per run made a property of 60 runs take seconds.
 */
export function expectLeaseBounds(
  admittedAt: readonly number[],
  { burst, intervalMs, ttlMs }: { burst: number; intervalMs: number; ttlMs: number },
): void {
  admittedAt.forEach((at, i) => {
    const fromFreshKey = burst + (at - T0) / intervalMs + 1e-9;
    if (!(i + 1 <= fromFreshKey)) expect(i + 1).toBeLessThanOrEqual(fromFreshKey);
    for (let j = 0; j <= i; j++) {
      const bound = burst + (at - (admittedAt[j] as number) + ttlMs) / intervalMs + 1e-9;
      if (!(i - j + 1 <= bound)) expect(i - j + 1).toBeLessThanOrEqual(bound);
    }
  });
}
