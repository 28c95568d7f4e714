/**
 * Limiter instances sharing one store and one injected clock, for the lease tests. Test support
 * only; not exported from the package.
 */
import type { PolicyInput } from '../types.js';
import { createLimiter, type Limiter } from './create-limiter.js';
import { SwitchableStore } from './test-stores.test-support.js';

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
