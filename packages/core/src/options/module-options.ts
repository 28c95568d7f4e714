/**
 * The rules of the Nest module's options as a whole (`RateLimitModule.forRoot()`, surface
 * `nestjs-module`): checked when the module starts, naming the option and the value.
 */

import { FRAMEWORK_OPTIONS } from './framework-options.js';
import { HTTP_OPTIONS } from './http-options.js';
import { checkOption } from './option.js';
import { checkOptionNames } from './option-names.js';
import { RateLimitOptionsError } from './options-error.js';
import { optionNames } from './schema.js';

const SOURCE = 'RateLimitModule';

/**
 * Every option name `forRoot()` takes (the schema's `nestjs-module` options, the module
 * extras such as `isGlobal` aside: Nest takes those off before the options reach the module).
 */
export const NEST_MODULE_OPTION_NAMES: readonly string[] = Object.freeze(
  optionNames('nestjs-module').filter((name) => name !== 'isGlobal'),
);

/**
 * Checks the module options as a whole: an object of known names, `defaultPolicies` and `store`
 * as the schema says, and one way of giving policies (`policies`, `limit` + `window`, or `limiter`).
 *
 * @throws RateLimitOptionsError naming the option and the value
 */
export function checkModuleOptions(options: unknown): void {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new RateLimitOptionsError('options', options, 'must be an object', SOURCE);
  }
  const o = options as Record<string, unknown>;
  checkOptionNames(o, NEST_MODULE_OPTION_NAMES, 'RateLimitModule.forRoot()', SOURCE);
  const error = (option: string, value: unknown, requirement: string) =>
    new RateLimitOptionsError(option, value, requirement, SOURCE);
  checkOption(FRAMEWORK_OPTIONS.defaultPolicies, 'defaultPolicies', o.defaultPolicies, error);
  checkOption(HTTP_OPTIONS.store, 'store', o.store, error);
  const shorthand = o.limit !== undefined || o.window !== undefined;
  if (o.limiter !== undefined && (o.policies !== undefined || shorthand)) {
    throw error(
      'limiter',
      o.limiter,
      'cannot be combined with "policies" (or "limit" and "window"): give one of them',
    );
  }
  if (o.limiter === undefined && !shorthand && (!Array.isArray(o.policies) || o.policies.length === 0)) {
    throw error(
      'policies',
      o.policies,
      'must be a non-empty array of policies (or give "limit" and "window", or "limiter")',
    );
  }
}

/** Limiter options that go to `createLimiter()` as they are (`prefix`, `timeoutMs`, `clock`...). */
const PASSED_TO_LIMITER = optionNames('createLimiter').filter(
  (name) => name !== 'policies' && name !== 'store',
);

/** The module options that go to `createLimiter()` as they are (`prefix`, `timeoutMs`, `clock`...). */
export function limiterOptionsOf(options: object): Record<string, unknown> {
  const picked: Record<string, unknown> = {};
  for (const name of PASSED_TO_LIMITER) {
    const value = (options as Record<string, unknown>)[name];
    if (value !== undefined) picked[name] = value;
  }
  return picked;
}

/**
 * The module's `requestWasSuccessful` serves the routes that skip (`skipFailedRequests` or
 * `skipSuccessfulRequests`, on the module or a route): when no route does, it decides nothing.
 *
 * @throws RateLimitOptionsError naming `requestWasSuccessful`
 */
export function checkSuccessDecided(requestWasSuccessful: unknown, someRouteSkips: boolean): void {
  if (requestWasSuccessful === undefined || someRouteSkips) return;
  throw new RateLimitOptionsError(
    'requestWasSuccessful',
    requestWasSuccessful,
    'needs "skipFailedRequests" or "skipSuccessfulRequests" on the module or a route (alone it decides nothing)',
    SOURCE,
  );
}

/**
 * A route's own policy (`@RateLimit({ limit, window })`) is built on the module's store: with a
 * module `limiter` alone the store is unknown.
 *
 * @throws RateLimitOptionsError naming `store`
 */
export function checkOwnPolicyStore(store: unknown, policyName: string): void {
  if (store !== undefined) return;
  throw new RateLimitOptionsError(
    'store',
    undefined,
    `is required: @RateLimit() on "${policyName}" defines its own policy, which needs the module's "store"; ` +
      'with "limiter" alone the store is unknown: pass "store" as well',
    SOURCE,
  );
}
