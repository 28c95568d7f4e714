/** Bans: a policy's block after a denial and its escalation, as written and as compiled. */
import { parseDuration } from './duration.js';
import { PolicyError } from './errors.js';
import { checkFields, plainObject } from './sub-options.js';

/**
 * A policy's ban, as the application writes it (like rate-limiter-flexible's `blockDuration`
 * and @fastify/rate-limit's `ban`). Durations are milliseconds or strings such as `'10m'`.
 */
export interface BanInput {
  /** How long a denied identity stays denied: `'1m'`, `'30s'` or milliseconds. */
  readonly blockMs: string | number;
  /**
   * Longer bans for repeat offenders: the `violations`-th denial within `windowMs` (counted
   * from the first of them) bans for `blockMs` instead of the ban's own.
   */
  readonly escalation?: {
    /** Denials within `windowMs` that escalate, at least 2. */
    readonly violations: number;
    /** The window the denials are counted in: `'1h'` or milliseconds. */
    readonly windowMs: string | number;
    /** The escalated block, at least the ban's own `blockMs`. */
    readonly blockMs: string | number;
  };
}

/** A validated ban in milliseconds. */
export interface CompiledBan {
  /** The block after a denial. */
  readonly blockMs: number;
  /** Denials within `violationWindowMs` that escalate; 0 for no escalation. */
  readonly violations: number;
  /** The window denials are counted in (0 without escalation). */
  readonly violationWindowMs: number;
  /** The block once escalated (`blockMs` without escalation). */
  readonly escalatedBlockMs: number;
}

const BAN_FIELDS = ['blockMs', 'escalation'];
const ESCALATION_FIELDS = ['violations', 'windowMs', 'blockMs'];

/**
 * Validates a policy's `ban` and compiles it to milliseconds; undefined for none. Every problem
 * throws a `PolicyError` naming the field (`ban.blockMs`, `ban.escalation.violations`) and the value.
 *
 * @param input the policy's `ban` as written
 * @param policy the policy's name, for messages
 */
export function compileBan(input: unknown, policy: string): CompiledBan | undefined {
  if (input === undefined) return undefined;
  if (!plainObject(input)) {
    throw new PolicyError('ban', input, "must be an object such as { blockMs: '1m' }", policy);
  }
  checkFields(input, BAN_FIELDS, 'ban', policy);
  if (input.blockMs === undefined) {
    throw new PolicyError('ban.blockMs', undefined, "is required (e.g. '1m', '30s' or milliseconds)", policy);
  }
  const blockMs = parseDuration(input.blockMs as string | number, 'ban.blockMs', policy);
  const escalation = input.escalation;
  if (escalation === undefined) {
    return Object.freeze({ blockMs, violations: 0, violationWindowMs: 0, escalatedBlockMs: blockMs });
  }
  if (!plainObject(escalation)) {
    throw new PolicyError(
      'ban.escalation',
      escalation,
      "must be an object such as { violations: 5, windowMs: '1h', blockMs: '1d' }",
      policy,
    );
  }
  checkFields(escalation, ESCALATION_FIELDS, 'ban.escalation', policy);
  const { violations } = escalation;
  if (typeof violations !== 'number' || !Number.isSafeInteger(violations) || violations < 2) {
    throw new PolicyError(
      'ban.escalation.violations',
      violations,
      'must be a whole number of at least 2 (every denial bans for ban.blockMs already)',
      policy,
    );
  }
  for (const field of ['windowMs', 'blockMs'] as const) {
    if (escalation[field] === undefined) {
      throw new PolicyError(
        `ban.escalation.${field}`,
        undefined,
        "is required (e.g. '1h' or milliseconds)",
        policy,
      );
    }
  }
  const violationWindowMs = parseDuration(
    escalation.windowMs as string | number,
    'ban.escalation.windowMs',
    policy,
  );
  const escalatedBlockMs = parseDuration(
    escalation.blockMs as string | number,
    'ban.escalation.blockMs',
    policy,
  );
  if (escalatedBlockMs < blockMs) {
    throw new PolicyError(
      'ban.escalation.blockMs',
      escalation.blockMs,
      `must be at least ban.blockMs (${blockMs} ms)`,
      policy,
    );
  }
  return Object.freeze({ blockMs, violations, violationWindowMs, escalatedBlockMs });
}
