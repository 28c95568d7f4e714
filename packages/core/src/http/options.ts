import type { IpList } from '../options/cidr.js';
import type { HeaderFormat } from '../options/defaults.js';
import type { DenyList } from '../options/deny-list.js';
import { ADAPTER_OPTION_NAMES, checkOption, HTTP_OPTIONS, type RateLimitOptions } from '../options/index.js';
import { checkOptionNames, closestName } from '../options/option-names.js';
import { RateLimitOptionsError } from '../options/options-error.js';
import { report, type SluiceLogger, WARNING_CODES } from '../warn.js';
import { type ChoiceSettings, resolveChoice } from './choose-options.js';
import { createLimitRequest, type RequestFacts, type RequestLimitResult } from './limit-request.js';
import type { ResolvedRateLimitOptions } from './resolved-options.js';

export type { ResolvedRateLimitOptions } from './resolved-options.js';

/** How an adapter wants its options checked (`createRateLimitHandler`'s third argument). */
export interface RateLimitHandlerSettings extends ChoiceSettings {
  /**
   * Every option name the adapter takes, its own included, for the "did you mean" of an
   * unknown name. Default `ADAPTER_OPTION_NAMES`.
   */
  readonly optionNames?: readonly string[];
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
 *   for every policy: `OPTION_DEFAULTS.algorithm`).
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
  const concurrencyStatus = checked(o, 'concurrencyStatus') as 429 | 503;
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
  const logger = checked(o, 'logger') as SluiceLogger | undefined;
  const choice = resolveChoice(options, { adapter, logger }, shadow, settings);
  checkCostNames(options.cost, choice.costNames);
  // A shared limiter (or a compiled policy) cannot carry shadow itself: its decisions are shadowed.
  if (choice.shadowDecisions && choice.limiter !== undefined) {
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
    limiter: choice.limiter,
    policyNames: choice.policyNames,
    choose: choice.choose,
    headerFormat,
    shadowHeaders,
    concurrencyStatus,
    shadow,
    shadowDecisions: choice.shadowDecisions,
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
