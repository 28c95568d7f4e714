/**
 * The options every adapter shares (`rateLimit({...})` in Express, Koa and Hono, the Nest
 * module), validated once at construction against the option schema, and the request
 * handler they build.
 */
import { createLimiter, type Limiter } from '../limiter/index.js';
import {
  ADAPTER_OPTION_NAMES,
  type CostValue,
  checkOption,
  HTTP_OPTIONS,
  type RateLimitOptions,
} from '../options/index.js';
import { checkOptionNames, closestName } from '../options/option-names.js';
import { RateLimitOptionsError } from '../options/options-error.js';
import { isCompiledPolicy } from '../policy/index.js';
import type { IdentityInput, PolicyInput } from '../types.js';
import { report, type SluiceLogger, WARNING_CODES } from '../warn.js';
import type { IpList } from './cidr.js';
import type { DenyList } from './deny-list.js';
import type { HeaderFormat } from './headers.js';
import { createLimitRequest, type RequestFacts, type RequestLimitResult } from './limit-request.js';
import { choosePerRequest } from './options-per-request.js';
import type { PolicyChooser } from './policy-choice.js';
import type { SettleOptions } from './settle-request.js';

/** How an adapter wants its options checked (`createRateLimitHandler`'s third argument). */
export interface RateLimitHandlerSettings {
  /**
   * Every option name the adapter takes, its own included, for the "did you mean" of an
   * unknown name. Default `ADAPTER_OPTION_NAMES`.
   */
  readonly optionNames?: readonly string[];
}

/** The options as validated, defaults applied, and the limiter built or selected. */
export interface ResolvedRateLimitOptions<Req> extends SettleOptions<Req> {
  /** The adapter these options were resolved for (`express`, `koa`, `hono`, `nestjs`). */
  readonly adapter: string;
  /** Where coded warnings and errors go (`logger`); undefined: `console.warn`, once per code. */
  readonly logger: SluiceLogger | undefined;
  /**
   * The limiter that decides: the shared one, or the one built from `policies` or the shorthand.
   * Undefined when `limit` or `policies` is a function and no shared `limiter` is given: each
   * value the function answers is compiled into a limiter of its own (see `choose`).
   */
  readonly limiter: Limiter | undefined;
  /** The limiter's policies that apply here, or undefined for all of them (or when `choose` picks them). */
  readonly policyNames: readonly string[] | undefined;
  /**
   * Chooses the limiter and policies per request when `policies` or `limit` is a function;
   * undefined when they are fixed here.
   */
  readonly choose: PolicyChooser<Req> | undefined;
  /** The header format (`headers`). */
  readonly headerFormat: HeaderFormat;
  /** Shadow policies shown in the headers too (`shadowHeaders`). */
  readonly shadowHeaders: boolean;
  /** Shadow forced by the `shadow` option. */
  readonly shadow: boolean;
  /**
   * Shadow applied to each decision rather than built into the policies: `shadow` with a
   * shared limiter or a policy from `definePolicy()`.
   */
  readonly shadowDecisions: boolean;
  /** Prefix length grouping IPv6 clients in the default identity, or false. */
  readonly ipv6Subnet: number | false;
  /** The identity function, or undefined for the default (the client IP). */
  readonly identity:
    | ((req: Req) => IdentityInput | undefined | Promise<IdentityInput | undefined>)
    | undefined;
  /** The cost as given (number, record or function), or undefined for the policies' own. */
  readonly cost: CostValue | ((req: Req) => CostValue | Promise<CostValue>) | undefined;
  /** The skip function, or undefined. */
  readonly skip: ((req: Req) => boolean | Promise<boolean>) | undefined;
  /** IPs never limited, or undefined. */
  readonly allowList: IpList | undefined;
  /** Client IPs and identities answered 403 before any charge, or undefined. */
  readonly denyList: DenyList | undefined;
}

/** The resolved options and the function that limits one request. */
export interface RateLimitHandler<Req> extends ResolvedRateLimitOptions<Req> {
  /**
   * Limits one request: skip, identity, cost, `limiter.check`, `toHttpVerdict`.
   * Resolves to `undefined` when `skip(req)` is true or the client IP is in `allowList`:
   * call next(), set nothing.
   * A request already checked by the same limiter and policy set (the same `facts.marker`,
   * by default `req` itself) is not charged again: the first decision comes back, with
   * `duplicate: true`. Rejects only for programmer errors (a throwing identity, skip or
   * cost function, an invalid cost); store failures are decisions (`unavailable`).
   */
  limitRequest(req: Req, facts: RequestFacts): Promise<RequestLimitResult | undefined>;
}

const fail = (option: string, value: unknown, requirement: string) =>
  new RateLimitOptionsError(option, value, requirement);

/** The value of a set option as its schema entry checks it, or the entry's default. */
function checked<K extends keyof typeof HTTP_OPTIONS>(options: Record<string, unknown>, name: K): unknown {
  return checkOption(HTTP_OPTIONS[name], name, options[name], fail);
}

/**
 * Validates adapter options and builds (or selects from) the limiter, then the request
 * handler. Every problem throws here, naming the option and the value (`rateLimit: "limit"
 * must be a positive integer, got -1`); policy problems throw the limiter's `PolicyError`.
 *
 * Three ways to say which policies apply:
 * - `limiter` (shared), optionally with `policies` naming some of its policies;
 * - `policies` as policy inputs: a limiter is built here (with `store`, `prefix`);
 * - `limit` + `window`: one policy named `default` (`algorithm`, default token-bucket as
 *   for every policy: `POLICY_DEFAULTS.algorithm`).
 *
 * @param options the adapter's options, without its own extras (`onLimited` etc.)
 * @param adapter the adapter's name, for messages
 * @param settings the adapter's option names, for the check of unknown names
 */
export function createRateLimitHandler<Req>(
  options: RateLimitOptions<Req>,
  adapter: string,
  settings: RateLimitHandlerSettings = {},
): RateLimitHandler<Req> {
  const resolved = resolveRateLimitOptions(options, adapter, settings);
  return { ...resolved, limitRequest: createLimitRequest(resolved) };
}

/**
 * Validates adapter options, applies the defaults and builds (or selects from) the limiter;
 * `createRateLimitHandler` adds the request handler. Throws as `createRateLimitHandler` does.
 */
export function resolveRateLimitOptions<Req>(
  options: RateLimitOptions<Req>,
  adapter: string,
  settings: RateLimitHandlerSettings = {},
): ResolvedRateLimitOptions<Req> {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new RateLimitOptionsError('options', options, 'must be an object');
  }
  const o = options as Record<string, unknown>;
  checkOptionNames(o, settings.optionNames ?? ADAPTER_OPTION_NAMES, `${adapter} rateLimit()`);

  checked(o, 'identity');
  checked(o, 'skip');
  checked(o, 'cost');
  const headerFormat = checked(o, 'headers') as HeaderFormat;
  const shadowHeaders = checked(o, 'shadowHeaders') as boolean;
  const shadow = checked(o, 'shadow') as boolean;
  const ipv6Subnet = checked(o, 'ipv6Subnet') as number | false;
  const allowList = checked(o, 'allowList') as IpList | undefined;
  const denyList = checked(o, 'denyList') as DenyList | undefined;
  checked(o, 'failMode');
  checked(o, 'policies');
  checked(o, 'settle');
  checked(o, 'requestWasSuccessful');
  const skipFailedRequests = checked(o, 'skipFailedRequests') as boolean;
  const skipSuccessfulRequests = checked(o, 'skipSuccessfulRequests') as boolean;
  checkSkipPair(options, skipFailedRequests, skipSuccessfulRequests);
  const shorthand = options.limit !== undefined || options.window !== undefined;
  if (shorthand && (options.policies !== undefined || options.limiter !== undefined)) {
    throw new RateLimitOptionsError(
      options.limit !== undefined ? 'limit' : 'window',
      options.limit ?? options.window,
      'cannot be combined with "policies" or "limiter" (the shorthand defines the only policy)',
    );
  }
  if (options.algorithm !== undefined && !shorthand) {
    throw new RateLimitOptionsError(
      'algorithm',
      options.algorithm,
      'applies to the "limit" + "window" shorthand only',
    );
  }

  // `policies` or `limit` as a function: the limiter and policies are chosen per request.
  const logger = checked(o, 'logger') as SluiceLogger | undefined;
  const perRequest = choosePerRequest(options, { adapter, logger }, shadow);
  let limiter: Limiter | undefined = perRequest?.limiter;
  // A shared limiter (or a compiled policy) cannot carry shadow itself: shadow each decision.
  let shadowDecisions = shadow && options.limiter !== undefined;
  let policyNames: readonly string[] | undefined;
  if (perRequest !== undefined) {
    // Checked by choosePerRequest.
  } else if (options.limiter !== undefined) {
    checked(o, 'limiter');
    for (const name of ['store', 'prefix', 'failMode'] as const) {
      if (options[name] !== undefined) {
        throw new RateLimitOptionsError(
          name,
          options[name],
          'belongs to the shared "limiter" (set it there)',
        );
      }
    }
    limiter = options.limiter;
    if (options.policies !== undefined)
      policyNames = sharedPolicyNames(limiter, options.policies as readonly (PolicyInput | string)[]);
  } else {
    let inputs = policyInputs(options);
    if (options.store !== undefined) checked(o, 'store');
    inputs = inputs.map((input) => {
      let p = input;
      if (options.failMode !== undefined && p.failMode === undefined)
        p = { ...p, failMode: options.failMode };
      if (shadow && p.shadow !== true) {
        // A policy from definePolicy() cannot be re-validated with changes: shadow its decisions instead.
        if (isCompiledPolicy(p)) shadowDecisions = true;
        else p = { ...p, shadow: true };
      }
      return p;
    });
    limiter = createLimiter({
      policies: inputs,
      ...(options.store !== undefined && { store: options.store }),
      ...(options.prefix !== undefined && { prefix: options.prefix }),
    });
  }
  checkCostNames(
    options.cost,
    perRequest === undefined ? limiter?.policies.map((p) => p.name) : perRequest.costNames,
  );
  if (shadowDecisions) {
    report(
      logger,
      'warn',
      WARNING_CODES.SHADOW_WITH_SHARED_LIMITER,
      `${adapter} rateLimit(): "shadow" with a shared limiter (or a policy from definePolicy()) lets ` +
        'denied requests through here, but the limiter still reports them as over_limit. Set shadow on the ' +
        'policies themselves to report shadow_over_limit.',
      { adapter },
    );
  }
  return {
    adapter,
    limiter,
    policyNames,
    choose: perRequest?.choose,
    headerFormat,
    shadowHeaders,
    shadow,
    shadowDecisions: perRequest?.shadowDecisions ?? shadowDecisions,
    ipv6Subnet,
    identity: options.identity,
    cost: options.cost,
    skip: options.skip,
    allowList,
    denyList,
    settle: options.settle,
    skipFailedRequests,
    skipSuccessfulRequests,
    requestWasSuccessful: options.requestWasSuccessful,
    logger,
  };
}

/**
 * The skip options together: both would settle every request to 0 (no limit at all), and
 * `requestWasSuccessful` without either has nothing to decide.
 */
function checkSkipPair<Req>(
  options: RateLimitOptions<Req>,
  skipFailed: boolean,
  skipSuccessful: boolean,
): void {
  if (skipFailed && skipSuccessful) {
    throw new RateLimitOptionsError(
      'skipSuccessfulRequests',
      true,
      'cannot be combined with "skipFailedRequests": together they count no request at all (choose one)',
    );
  }
  if (options.requestWasSuccessful !== undefined && !skipFailed && !skipSuccessful) {
    throw new RateLimitOptionsError(
      'requestWasSuccessful',
      options.requestWasSuccessful,
      'needs "skipFailedRequests" or "skipSuccessfulRequests" (alone it decides nothing)',
    );
  }
}

/**
 * A `cost` record names policies that can apply: `known` are the names of the policies the
 * middleware may check (undefined when a function answers new policies per request, whose names
 * are known only then).
 */
function checkCostNames(cost: unknown, known: readonly string[] | undefined): void {
  if (known === undefined || typeof cost !== 'object' || cost === null) return;
  for (const name of Object.keys(cost)) {
    if (known.includes(name)) continue;
    const closest = closestName(name, known);
    throw new RateLimitOptionsError(
      `cost.${name}`,
      (cost as Record<string, unknown>)[name],
      `names no policy of this middleware (${known.join(', ')})${closest === undefined ? '' : `: did you mean "${closest}"?`}`,
    );
  }
}

/** `policies` with a shared limiter: names of its policies, each once. */
function sharedPolicyNames(limiter: Limiter, policies: readonly (PolicyInput | string)[]): string[] {
  const known = limiter.policies.map((p) => p.name);
  const names: string[] = [];
  for (const entry of policies) {
    if (typeof entry !== 'string') {
      throw new RateLimitOptionsError(
        'policies',
        entry,
        "must name the shared limiter's policies (define new policies in createLimiter())",
      );
    }
    if (!known.includes(entry)) {
      const closest = closestName(entry, known);
      throw new RateLimitOptionsError(
        'policies',
        entry,
        `must name a policy of the limiter (${known.join(', ')})${closest === undefined ? '' : `: did you mean "${closest}"?`}`,
      );
    }
    if (!names.includes(entry)) names.push(entry);
  }
  return names;
}

/** The policy inputs of a limiter built here: `policies`, or the `limit` + `window` shorthand. */
function policyInputs<Req>(options: RateLimitOptions<Req>): PolicyInput[] {
  if (options.policies !== undefined) {
    return (options.policies as readonly (PolicyInput | string)[]).map((entry) => {
      if (typeof entry === 'string') {
        throw new RateLimitOptionsError('policies', entry, 'names a policy, which needs a shared "limiter"');
      }
      if (typeof entry !== 'object' || entry === null) {
        throw new RateLimitOptionsError('policies', entry, 'must hold policy names or policies');
      }
      return entry;
    });
  }
  if (options.limit !== undefined || options.window !== undefined) {
    const { limit, window } = options;
    // `limit` is required with the shorthand: an unset one is checked like a bad one.
    checkOption(HTTP_OPTIONS.limit, 'limit', limit ?? Number.NaN, (name, _value, requirement) =>
      fail(name, limit, requirement),
    );
    if (window === undefined) {
      throw new RateLimitOptionsError(
        'window',
        window,
        "is required with \"limit\" (e.g. '1m', '10s' or milliseconds)",
      );
    }
    return [
      {
        name: 'default',
        ...(options.algorithm !== undefined && { algorithm: options.algorithm }),
        limit: limit as number,
        window,
      },
    ];
  }
  throw new RateLimitOptionsError(
    'policies',
    undefined,
    'is required: give "policies", "limit" and "window", or a shared "limiter"',
  );
}
