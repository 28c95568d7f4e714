/** `definePolicy`: validates a policy as written and compiles it to the units the algorithms use. */
import { holdsSlots } from '../algorithms/concurrency.js';
import { ALGORITHM_LIST, ALGORITHM_NAMES, ALGORITHMS, isAlgorithm } from '../algorithms/registry.js';
import { OPTION_DEFAULTS } from '../options/defaults.js';
import type { Algorithm, CompiledPolicy, CostInput, PolicyInput } from '../types.js';
import { compileBan } from './ban.js';
import { compileConcurrencyLimits, refuseConcurrencyFields, refuseLeaseMs } from './concurrency-policy.js';
import { MAX_POLICY_NAME_LENGTH, POLICY_FAIL_MODES } from './defaults.js';
import { parseDuration, parseRate } from './duration.js';
import { PolicyError } from './errors.js';
import { compileLease, compileLocalStage } from './lease.js';
import { compileMaxWait } from './max-wait.js';
import { isPositiveInteger } from './positive-integer.js';
import { compileQuota, refuseQuotaMix } from './quota.js';

const KNOWN_FIELDS: readonly string[] = [
  'name',
  'algorithm',
  'limit',
  'window',
  'rate',
  'burst',
  'cost',
  'failMode',
  'shadow',
  'scope',
  'ban',
  'lease',
  'local',
  'leaseMs',
  'maxWaitMs',
  'quota',
];

const NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;

/** Policies built by `definePolicy`; passing one back in returns it unchanged. */
const compiled = new WeakSet<object>();

/** True when `value` is a policy built by `definePolicy` (and not a copy of one). */
export function isCompiledPolicy(value: unknown): value is CompiledPolicy {
  return typeof value === 'object' && value !== null && compiled.has(value);
}

/** Freezes a compiled policy and remembers it as built here. */
function remember(policy: CompiledPolicy): CompiledPolicy {
  const frozen = Object.freeze(policy);
  compiled.add(frozen);
  return frozen;
}

/** `a`, `a and b`, `a, b and c`. */
function andList(names: readonly string[]): string {
  return names.length < 2
    ? names.join('')
    : `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]}`;
}

/** The algorithms whose policies take fractional costs, and those that take a `burst`, as prose. */
const FRACTIONAL_COSTS = andList(ALGORITHM_LIST.filter((m) => m.limits.fractionalCosts).map((m) => m.name));
const BURSTS = andList(ALGORITHM_LIST.filter((m) => m.limits.burst).map((m) => m.name));

/**
 * Checks one static cost against a compiled policy's shape. Used for `policy.cost` here and
 * for request costs in the limiter. Returns a requirement sentence, or undefined when valid.
 */
export function costProblem(cost: unknown, algorithm: Algorithm, limit: number): string | undefined {
  if (typeof cost !== 'number' || !Number.isFinite(cost) || cost <= 0)
    return 'must be a positive, finite number';
  const rules = ALGORITHMS[algorithm].limits;
  if (!rules.fractionalCosts && !Number.isInteger(cost)) {
    return `must be a whole number for ${algorithm} (fractions are for ${FRACTIONAL_COSTS})`;
  }
  if (cost > limit) {
    return `must not exceed the policy's ${rules.burst ? 'burst' : 'limit'} (${limit})`;
  }
  return undefined;
}

/**
 * Validates a policy and compiles it. Every problem throws a `PolicyError` naming the
 * policy, the field and the value; a compiled policy never fails on the request path.
 *
 * Token bucket and GCRA: `limit` per `window` (or `rate`) is the refill rate and `burst`
 * the capacity (default `limit`): `{ burst: 20, rate: '1/s' }` compiles to limit 20,
 * intervalMs 1000, windowMs 20000. Window algorithms admit `limit` units per `window`.
 * Concurrency (`algorithm: 'concurrency'`): at most `limit` requests in flight, each slot living
 * `leaseMs` unless renewed (default 30 s); compiled to windowMs = intervalMs = leaseMs.
 *
 * @param input the policy as the application writes it (or an already compiled policy)
 * @returns a frozen CompiledPolicy
 * @throws PolicyError on any invalid field
 */
export function definePolicy(input: PolicyInput | CompiledPolicy): CompiledPolicy {
  if (isCompiledPolicy(input)) return input;
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new PolicyError('policy', input, 'must be an object such as { name, limit, window }');
  }
  const { name } = input as PolicyInput;
  if (typeof name !== 'string' || name.length === 0) {
    throw new PolicyError('name', name, 'must be a non-empty string');
  }
  if (name.length > MAX_POLICY_NAME_LENGTH || !NAME.test(name)) {
    throw new PolicyError(
      'name',
      name,
      `must be at most ${MAX_POLICY_NAME_LENGTH} letters, digits, '_', '-' or '.', starting with a letter, digit or '_'`,
    );
  }
  if (holdsSlots(input as PolicyInput)) refuseConcurrencyFields(input as PolicyInput, name);
  for (const field of Object.keys(input)) {
    if (!KNOWN_FIELDS.includes(field)) {
      throw new PolicyError(
        field,
        (input as unknown as Record<string, unknown>)[field],
        `is not a policy field (known: ${KNOWN_FIELDS.join(', ')})`,
        name,
      );
    }
  }
  const p = input as PolicyInput;

  const algorithm = p.algorithm ?? OPTION_DEFAULTS.algorithm;
  if (!isAlgorithm(algorithm)) {
    throw new PolicyError('algorithm', p.algorithm, `must be one of ${ALGORITHM_NAMES.join(', ')}`, name);
  }
  const rules = ALGORITHMS[algorithm].limits;
  const failMode = p.failMode ?? OPTION_DEFAULTS.failMode;
  if (!POLICY_FAIL_MODES.includes(failMode)) {
    throw new PolicyError('failMode', p.failMode, `must be one of ${POLICY_FAIL_MODES.join(', ')}`, name);
  }
  const shadow = p.shadow ?? OPTION_DEFAULTS.policyShadow;
  if (typeof shadow !== 'boolean') throw new PolicyError('shadow', p.shadow, 'must be true or false', name);
  const scope = p.scope ?? OPTION_DEFAULTS.policyScope;
  if (scope !== 'identity' && scope !== 'route') {
    throw new PolicyError('scope', p.scope, "must be 'identity' or 'route'", name);
  }
  const quota = compileQuota(p.quota, { ...p, failMode, algorithm }, name);
  if (holdsSlots({ algorithm })) {
    const limits = compileConcurrencyLimits(p, name);
    return remember({ name, algorithm, ...limits, cost: 1, failMode, shadow, scope });
  }
  refuseLeaseMs(p, algorithm, name);

  // The rate: `rate`, or `limit` per `window`.
  let rateLimit: number;
  let rateWindowMs: number;
  if (p.rate !== undefined) {
    if (p.limit !== undefined || p.window !== undefined) {
      throw new PolicyError(
        'rate',
        p.rate,
        'cannot be combined with "limit" or "window" (give either "rate" or "limit" and "window")',
        name,
      );
    }
    const rate = parseRate(p.rate, name);
    rateLimit = rate.limit;
    rateWindowMs = rate.windowMs;
  } else {
    if (p.limit === undefined) {
      throw new PolicyError('limit', p.limit, 'is required (give "limit" and "window", or "rate")', name);
    }
    if (!isPositiveInteger(p.limit))
      throw new PolicyError('limit', p.limit, 'must be a positive integer', name);
    if (p.window === undefined) {
      throw new PolicyError(
        'window',
        p.window,
        `is required with "limit" (e.g. '1m', '10s' or milliseconds)`,
        name,
      );
    }
    rateLimit = p.limit;
    rateWindowMs = parseDuration(p.window, 'window', name);
  }

  if (rules.burst) {
    if (p.burst !== undefined && !isPositiveInteger(p.burst)) {
      throw new PolicyError('burst', p.burst, 'must be a positive integer', name);
    }
  } else if (p.burst !== undefined) {
    throw new PolicyError(
      'burst',
      p.burst,
      `applies only to ${BURSTS} (${algorithm} admits "limit" units per "window")`,
      name,
    );
  }
  const { limit, windowMs, intervalMs } = rules.compile(rateLimit, rateWindowMs, p.burst);
  const cap = rules.maxLimit;
  if (cap !== undefined && limit > cap.units) {
    const field = p.burst !== undefined ? 'burst' : p.rate !== undefined ? 'rate' : 'limit';
    throw new PolicyError(
      field,
      p.burst ?? p.rate ?? p.limit,
      `must allow at most ${cap.units} units per window for ${algorithm} (${cap.reason}); use algorithm '${cap.instead}' for larger quotas`,
      name,
    );
  }

  const cost: CostInput = p.cost ?? OPTION_DEFAULTS.policyCost;
  if (typeof cost !== 'function') {
    if (typeof cost === 'number' && Number.isFinite(cost) && cost > limit) {
      const field = p.burst !== undefined ? 'burst' : 'limit';
      throw new PolicyError(field, limit, `must be at least the policy's cost (${cost})`, name);
    }
    const problem = costProblem(cost, algorithm, limit);
    if (problem !== undefined) {
      throw new PolicyError('cost', cost, `${problem} (or a function of the descriptor)`, name);
    }
  }

  const ban = compileBan(p.ban, name);
  const lease = compileLease(p.lease, limit, failMode, name);
  if (lease !== undefined && typeof cost === 'number' && cost > lease.units) {
    throw new PolicyError('lease.units', lease.units, `must be at least the policy's cost (${cost})`, name);
  }
  const local = compileLocalStage(p.local, name);
  if (local !== undefined && typeof cost === 'number' && cost > local.burst) {
    throw new PolicyError('local.burst', local.burst, `must be at least the policy's cost (${cost})`, name);
  }
  if (lease !== undefined && ban !== undefined) {
    throw new PolicyError(
      'lease',
      p.lease,
      'cannot be combined with "ban" (a ban counts every denial in the store; leased requests are admitted in-process)',
      name,
    );
  }
  const maxWaitMs = compileMaxWait(p, algorithm, name);
  return remember({
    name,
    algorithm,
    limit,
    windowMs,
    intervalMs,
    cost,
    failMode,
    shadow,
    scope,
    ...(ban !== undefined && { ban }),
    ...(lease !== undefined && { lease }),
    ...(local !== undefined && { local }),
    ...(maxWaitMs !== undefined && { maxWaitMs }),
    ...(quota !== undefined && { quota }),
  });
}

/**
 * Validates and compiles the policies of one limiter: each through `definePolicy`, names unique.
 *
 * @throws PolicyError on an empty list, any invalid policy or a duplicate name
 */
export function definePolicies(inputs: readonly (PolicyInput | CompiledPolicy)[]): readonly CompiledPolicy[] {
  if (!Array.isArray(inputs) || inputs.length === 0) {
    throw new PolicyError('policies', inputs, 'must be a non-empty array of policies');
  }
  const seen = new Set<string>();
  const out: CompiledPolicy[] = [];
  for (const input of inputs) {
    const policy = definePolicy(input);
    if (seen.has(policy.name)) {
      throw new PolicyError(
        'name',
        policy.name,
        'must be unique within one limiter; it appears twice',
        policy.name,
      );
    }
    seen.add(policy.name);
    out.push(policy);
  }
  refuseQuotaMix(out);
  return Object.freeze(out);
}
