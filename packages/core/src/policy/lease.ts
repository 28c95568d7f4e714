/** Leases and the local stage of a policy: as written and as compiled. */
import type { FailMode } from '../model/fail-mode.js';
import { parseDuration, parseRate } from './duration.js';
import { PolicyError } from './errors.js';
import { isPositiveInteger } from './positive-integer.js';
import { checkFields, plainObject } from './sub-options.js';

/**
 * A policy's lease, as the application writes it: each instance takes `units` from the store's
 * budget in one call and admits requests from them in-process until they are spent or `ttlMs`
 * has passed, then takes the next lease. Units left when a lease expires are dropped.
 */
export interface LeaseInput {
  /** Units taken per lease: a positive whole number, at most the policy's limit (its burst). */
  readonly units: number;
  /** How long a lease may be spent: `'1s'`, `'500ms'` or milliseconds. */
  readonly ttlMs: string | number;
  /**
   * With `failMode: 'lease'`: the fail mode once the current lease is spent or expired while the
   * store cannot decide (`'closed'`, `'open'` or `'local'`). Default `'closed'`.
   */
  readonly failModeAfter?: Exclude<FailMode, 'lease'>;
  /**
   * Size each lease by the key's use, `units` at most: start at 1 unit, double while leases are
   * spent within half their TTL, halve when one expires unspent, start again after a denial. Idle
   * and cold keys then hold little of the budget; a hot key soon takes `units`. Default `false`.
   */
  readonly adaptive?: boolean;
}

/** A validated lease. */
export interface CompiledLease {
  readonly units: number;
  readonly ttlMs: number;
  /** The fail mode after the lease (used by `failMode: 'lease'`). */
  readonly failModeAfter: Exclude<FailMode, 'lease'>;
  /** Whether leases are sized by use (`units` the most). */
  readonly adaptive: boolean;
}

/**
 * A policy's local stage, as written: an in-process token bucket per key in front of the store
 * (`burst` capacity, refilled at `rate`) that turns away a burst without a store call.
 */
export interface LocalStageInput {
  /** The bucket's capacity: a positive whole number. */
  readonly burst: number;
  /** Its refill rate: `'20/s'`, `{ limit: 20, window: '1s' }`. */
  readonly rate: string | { readonly limit: number; readonly window: string | number };
}

/** A validated local stage: capacity, the rate as given, and ms to earn back one unit. */
export interface CompiledLocalStage {
  readonly burst: number;
  readonly rate: LocalStageInput['rate'];
  readonly intervalMs: number;
}

const LEASE_FIELDS = ['units', 'ttlMs', 'failModeAfter', 'adaptive'];
const LOCAL_FIELDS = ['burst', 'rate'];
const AFTER_MODES: readonly string[] = ['closed', 'open', 'local'];

/**
 * Validates a policy's `lease` against its compiled limit and fail mode; undefined for none.
 *
 * @param input the policy's `lease` as written
 * @param limit the policy's compiled limit (burst for a bucket)
 * @param failMode the policy's fail mode (`'lease'` needs a lease)
 * @param policy the policy's name, for messages
 * @throws PolicyError naming the field (`lease.units`, `lease.ttlMs`, ...) and the value
 */
export function compileLease(
  input: unknown,
  limit: number,
  failMode: FailMode,
  policy: string,
): CompiledLease | undefined {
  if (input === undefined) {
    if (failMode === 'lease') {
      throw new PolicyError(
        'failMode',
        failMode,
        'needs a lease (give lease: { units, ttlMs }, or another fail mode)',
        policy,
      );
    }
    return undefined;
  }
  if (!plainObject(input)) {
    throw new PolicyError('lease', input, "must be an object such as { units: 10, ttlMs: '1s' }", policy);
  }
  checkFields(input, LEASE_FIELDS, 'lease', policy);
  const { units } = input;
  if (!isPositiveInteger(units)) {
    throw new PolicyError('lease.units', units, 'must be a positive whole number', policy);
  }
  if (units > limit) {
    throw new PolicyError('lease.units', units, `must not exceed the policy's limit (${limit})`, policy);
  }
  if (input.ttlMs === undefined) {
    throw new PolicyError('lease.ttlMs', undefined, "is required (e.g. '1s' or milliseconds)", policy);
  }
  const ttlMs = parseDuration(input.ttlMs as string | number, 'lease.ttlMs', policy);
  const after = input.failModeAfter;
  if (after !== undefined && !AFTER_MODES.includes(after as string)) {
    throw new PolicyError('lease.failModeAfter', after, `must be one of ${AFTER_MODES.join(', ')}`, policy);
  }
  if (after !== undefined && failMode !== 'lease') {
    throw new PolicyError(
      'lease.failModeAfter',
      after,
      `applies only with failMode 'lease' (this policy fails '${failMode}')`,
      policy,
    );
  }
  const { adaptive } = input;
  if (adaptive !== undefined && typeof adaptive !== 'boolean') {
    throw new PolicyError('lease.adaptive', adaptive, 'must be true or false', policy);
  }
  return Object.freeze({
    units,
    ttlMs,
    failModeAfter: (after ?? 'closed') as CompiledLease['failModeAfter'],
    adaptive: adaptive ?? false,
  });
}

/**
 * Validates a policy's `local` stage; undefined for none.
 *
 * @throws PolicyError naming the field (`local.burst`, `local.rate`) and the value
 */
export function compileLocalStage(input: unknown, policy: string): CompiledLocalStage | undefined {
  if (input === undefined) return undefined;
  if (!plainObject(input)) {
    throw new PolicyError('local', input, "must be an object such as { burst: 20, rate: '10/s' }", policy);
  }
  checkFields(input, LOCAL_FIELDS, 'local', policy);
  const { burst } = input;
  if (!isPositiveInteger(burst)) {
    throw new PolicyError('local.burst', burst, 'must be a positive whole number', policy);
  }
  if (input.rate === undefined) {
    throw new PolicyError('local.rate', undefined, "is required (e.g. '10/s')", policy);
  }
  let rate: { limit: number; windowMs: number };
  try {
    rate = parseRate(input.rate as LocalStageInput['rate'], policy);
  } catch (error) {
    if (error instanceof PolicyError) {
      throw new PolicyError(
        'local.rate',
        input.rate,
        "must be a rate such as '10/s' or { limit, window }",
        policy,
      );
    }
    throw error;
  }
  return Object.freeze({
    burst,
    rate: input.rate as LocalStageInput['rate'],
    intervalMs: rate.windowMs / rate.limit,
  });
}

/** The fail mode that applies when the store cannot decide: `failMode`, or after a lease its `failModeAfter`. */
export function fallbackFailMode(policy: {
  readonly failMode: FailMode;
  readonly lease?: CompiledLease;
}): Exclude<FailMode, 'lease'> {
  return policy.failMode === 'lease' ? (policy.lease?.failModeAfter ?? 'closed') : policy.failMode;
}
