/** Every policy default, in one place. */
import type { Algorithm, FailMode } from '../types.js';

/** Defaults applied by `definePolicy` when a field is unset. */
export const POLICY_DEFAULTS = Object.freeze({
  algorithm: 'token-bucket' as Algorithm,
  failMode: 'closed' as FailMode,
  cost: 1,
  shadow: false,
  scope: 'identity' as 'identity' | 'route',
});

/** The fail modes an adapter's `failMode` option (and any policy) takes. */
export const FAIL_MODES: readonly FailMode[] = Object.freeze(['closed', 'open', 'local']);

/** Every fail mode a policy takes: `FAIL_MODES` and `lease` (for a policy with a lease). */
export const POLICY_FAIL_MODES: readonly FailMode[] = Object.freeze([...FAIL_MODES, 'lease']);

/** Longest policy name; names appear in headers, metric labels and keys. */
export const MAX_POLICY_NAME_LENGTH = 64;

/** The in-process tables of leases and of local stages: most keys each holds (oldest dropped first). */
export const IN_PROCESS_DEFAULTS = Object.freeze({
  /** Keys with a lease held at once; dropping one drops its unspent units (under-use, never over). */
  leaseMaxKeys: 100_000,
  /** Keys with a local-stage bucket at once; dropping one forgets its local usage. */
  localStageMaxKeys: 100_000,
});
