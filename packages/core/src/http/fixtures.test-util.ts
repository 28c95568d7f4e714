/** Test fixtures for the HTTP layer: decisions and policy results built by hand. Not exported. */

import { LimiterCounters } from '../limiter/counters.js';
import type { Limiter } from '../limiter/limiter.js';
import type { Decision, Descriptor, PolicyResult } from '../types.js';

/** A policy result with sensible defaults: allowed, limit 20, window 20 s. */
export function result(overrides: Partial<PolicyResult> & { policy: string }): PolicyResult {
  return {
    algorithm: 'token-bucket',
    allowed: true,
    outcome: 'allowed',
    limit: 20,
    windowMs: 20_000,
    remaining: 19,
    resetMs: 1000,
    retryAfterMs: 0,
    cost: 1,
    shadow: false,
    failMode: 'closed',
    ...overrides,
  };
}

/** A decision over these results, top-level fields derived the way the limiter does. */
export function decision(results: PolicyResult[], overrides: Partial<Decision> = {}): Decision {
  const enforced = results.filter((r) => !r.shadow);
  const denying = enforced.filter((r) => !r.allowed && r.outcome === 'over_limit');
  const failedClosed = enforced.filter((r) => r.outcome === 'unavailable' && r.failMode === 'closed');
  let deciding: PolicyResult | undefined;
  for (const r of denying) if (deciding === undefined || r.retryAfterMs > deciding.retryAfterMs) deciding = r;
  if (deciding === undefined) {
    for (const r of enforced) if (deciding === undefined || r.remaining < deciding.remaining) deciding = r;
  }
  const outcome = denying.length > 0 ? 'over_limit' : failedClosed.length > 0 ? 'unavailable' : 'allowed';
  return {
    allowed: denying.length === 0 && failedClosed.length === 0,
    outcome,
    policy: failedClosed[0]?.policy ?? deciding?.policy,
    limit: deciding?.limit ?? 0,
    remaining: deciding?.remaining ?? 0,
    resetMs: deciding?.resetMs ?? 0,
    retryAfterMs: deciding?.retryAfterMs ?? 0,
    shadowed: results.some((r) => r.shadow && !r.allowed),
    source: 'store',
    results,
    ...overrides,
  };
}

/** A limiter that answers every check with `answer` and keeps the descriptors it saw. */
export function fakeLimiter(
  answer: Decision = decision([result({ policy: 'a' })]),
): Limiter & { seen: Descriptor[] } {
  const seen: Descriptor[] = [];
  return {
    seen,
    policies: [{ name: 'a' }, { name: 'b' }] as unknown as Limiter['policies'],
    prefix: 'sluice',
    breakerState: 'closed',
    liveEvictions: 0,
    counters: new LimiterCounters(0.1, () => undefined),
    policy: (name: string) => ({ name }) as never,
    updatePolicies: () => undefined,
    check: async (d: Descriptor) => {
      seen.push(d);
      return answer;
    },
    peek: async () => answer,
    checkEntries: async () => answer,
    reset: async () => {},
    settle: async () => 'noop',
    release: async () => {},
    hasSlots: () => false,
    onSlotLost: () => () => {},
    close: async () => {},
    onDecision: () => () => {},
  } as Limiter & { seen: Descriptor[] };
}
