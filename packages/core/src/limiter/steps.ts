/** The steps of a check, made once per set of policies: only the ones these policies use. */

import { IN_PROCESS_DEFAULTS } from '../policy/defaults.js';
import { fallbackFailMode } from '../policy/lease.js';
import type { Clock, CompiledPolicy } from '../types.js';
import type { LimiterCounters } from './counters.js';
import { DenialMemory, DenyCacheStep } from './denial-memory.js';
import { Leases } from './leases.js';
import { LocalFallback } from './local-fallback.js';
import { LocalStage } from './local-stage.js';
import type { ResolvedLimiterOptions } from './options.js';
import { QuotaStep } from './quota-step.js';
import type { StoreCall } from './store-call.js';

/**
 * The steps of a check in the order `check` takes them: the local stage, the deny cache, leases,
 * the store call (breaker and deadline), the local fallback; and the memory of denials the local
 * stage, the deny cache and the leases share. A step these policies and options
 * have no use for is undefined, and a check skips it.
 */
export interface Steps {
  readonly clock: Clock;
  /**
   * What the store last said of each key (a denial, a bound on a wait, no wait), for the local
   * stage, the deny cache and the leases: one memory, one maximum age (`denyCache.maxAgeMs`), one
   * eviction, forgotten at a reset and a refund of its key. Undefined when no such step is used.
   */
  readonly denials: DenialMemory | undefined;
  /** Regional quota policies: decided in-process from their shares (the only step they take). */
  readonly quota: QuotaStep | undefined;
  readonly localStage: LocalStage | undefined;
  readonly denyCache: DenyCacheStep | undefined;
  readonly leases: Leases | undefined;
  readonly store: StoreCall;
  readonly fallback: LocalFallback | undefined;
}

/**
 * The steps for `policies`. `previous` are the steps of the policies before an update: the local
 * fallback's in-process state carries on (a new one is made when these policies need one and
 * there was none); every other memory starts anew (a denial or a lease taken under the old limits
 * must not outlive them).
 */
export function composeSteps(
  store: StoreCall,
  policies: readonly CompiledPolicy[],
  resolved: ResolvedLimiterOptions,
  counters: LimiterCounters,
  previous?: Steps,
): Steps {
  const { clock } = resolved;
  const needsFallback = policies.some((p) => fallbackFailMode(p) === 'local');
  const staged = policies.some((p) => p.local !== undefined);
  const leased = policies.some((p) => p.lease !== undefined);
  const denials = memoryOfDenials(resolved, staged, leased);
  return {
    clock,
    denials,
    quota: policies.some((p) => p.quota !== undefined) ? new QuotaStep() : undefined,
    localStage: staged
      ? new LocalStage(store, IN_PROCESS_DEFAULTS.localStageMaxKeys, denials as DenialMemory)
      : undefined,
    denyCache:
      resolved.denyCacheMaxKeys === undefined
        ? undefined
        : new DenyCacheStep(denials as DenialMemory, counters.remembered),
    leases: leased
      ? new Leases(IN_PROCESS_DEFAULTS.leaseMaxKeys, denials as DenialMemory, counters)
      : undefined,
    store,
    fallback: needsFallback
      ? new LocalFallback(clock, resolved.localFallbackMaxKeys, previous?.fallback)
      : previous?.fallback,
  };
}

/**
 * The limiter's one memory of denials: as many keys as the steps that use it hold, the most of
 * them (`denyCache.maxKeys` for the deny cache, the local stage's and the leases' own bounds),
 * every one kept by `denyCache.maxAgeMs`. Undefined when no step uses it.
 */
function memoryOfDenials(
  resolved: ResolvedLimiterOptions,
  staged: boolean,
  leased: boolean,
): DenialMemory | undefined {
  const maxKeys = Math.max(
    resolved.denyCacheMaxKeys ?? 0,
    staged ? IN_PROCESS_DEFAULTS.localStageMaxKeys : 0,
    leased ? IN_PROCESS_DEFAULTS.leaseMaxKeys : 0,
  );
  return maxKeys === 0 ? undefined : new DenialMemory(maxKeys, resolved.denyCacheMaxAgeMs);
}
