/** The policy defaults (a view of `OPTION_DEFAULTS`, where every default lives) and the fail modes. */
import { OPTION_DEFAULTS } from '../options/defaults.js';
import type { FailMode } from '../types.js';

/** Defaults applied by `definePolicy` when a field is unset: a view of `OPTION_DEFAULTS`. */
export const POLICY_DEFAULTS = Object.freeze({
  algorithm: OPTION_DEFAULTS.algorithm,
  failMode: OPTION_DEFAULTS.failMode,
  cost: OPTION_DEFAULTS.policyCost,
  shadow: OPTION_DEFAULTS.policyShadow,
  scope: OPTION_DEFAULTS.policyScope,
  leaseMs: OPTION_DEFAULTS.concurrencyLeaseMs,
});

/** The fail modes an adapter's `failMode` option (and any policy) takes. */
export const FAIL_MODES: readonly FailMode[] = Object.freeze(['closed', 'open', 'local']);

/** Every fail mode a policy takes: `FAIL_MODES` and `lease` (for a policy with a lease). */
export const POLICY_FAIL_MODES: readonly FailMode[] = Object.freeze([...FAIL_MODES, 'lease']);

/** Longest policy name; names appear in headers, metric labels and keys. */
export const MAX_POLICY_NAME_LENGTH = 64;

/**
 * The in-process tables of leases and of local stages: most keys each holds (oldest dropped
 * first). A view of `OPTION_DEFAULTS`.
 */
export const IN_PROCESS_DEFAULTS = Object.freeze({
  leaseMaxKeys: OPTION_DEFAULTS.leaseMaxKeys,
  localStageMaxKeys: OPTION_DEFAULTS.localStageMaxKeys,
});
