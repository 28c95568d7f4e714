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

/** Every fail mode. */
export const FAIL_MODES: readonly FailMode[] = Object.freeze(['closed', 'open', 'local']);

/** Longest policy name; names appear in headers, metric labels and keys. */
export const MAX_POLICY_NAME_LENGTH = 64;
