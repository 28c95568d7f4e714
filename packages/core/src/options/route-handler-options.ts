/**
 * The options of one route's request handler from the module's options and the route's own
 * (`@RateLimit()`, `@SkipRateLimit()`): which policies apply, and the request options the route
 * takes from the module or sets over it.
 */
import { HTTP_OPTIONS } from './http-options.js';
import type { OptionsOf } from './option.js';
import { type PolicyNamesOf, type RouteLimit, SETTLE_OPTION_NAMES } from './route-options.js';

/**
 * The module options each route's handler takes as they are (`identity`, `skip`, `headers`,
 * `allowList`...): the shared options that neither build the limiter (`createLimiter()`'s,
 * and `limiter`) nor can be set per route (the route's `cost`, `shadow`, policy fields).
 */
const PER_REQUEST_OPTIONS = (Object.keys(HTTP_OPTIONS) as (keyof typeof HTTP_OPTIONS)[]).filter(
  (name) =>
    name !== 'limiter' &&
    !HTTP_OPTIONS[name].surfaces.includes('createLimiter') &&
    !HTTP_OPTIONS[name].surfaces.includes('nestjs-decorator'),
);

/**
 * The policy names that apply on a route: the route's (by name, or its own policy), else the
 * module's `defaultPolicies`, else `all`; less those `skipped` names. Undefined when none is left
 * (the route is not limited); a function of the request stays one (see `chosenWithout`).
 */
export function routePolicyNames<Req>(
  route: RouteLimit<Req> | undefined,
  defaultPolicies: readonly string[] | PolicyNamesOf<Req> | undefined,
  all: readonly string[],
  skipped: readonly string[] | undefined,
): readonly string[] | PolicyNamesOf<Req> | undefined {
  const selected =
    route?.kind === 'named'
      ? route.policies
      : route?.kind === 'own'
        ? [route.policy.name]
        : (defaultPolicies ?? all);
  const skips = new Set(skipped ?? []);
  if (typeof selected === 'function') return skips.size === 0 ? selected : chosenWithout(selected, skips);
  const names = selected.filter((name) => !skips.has(name));
  return names.length === 0 ? undefined : names;
}

/**
 * Names chosen per request, less the skipped ones. A request whose every chosen policy is skipped
 * has nothing left to apply: an empty answer, which makes it `unavailable` like any other bad
 * answer (skip the whole route instead).
 */
function chosenWithout<Req>(choose: PolicyNamesOf<Req>, skipped: ReadonlySet<string>): PolicyNamesOf<Req> {
  const without = (names: readonly string[]): readonly string[] =>
    Array.isArray(names) ? names.filter((name) => !skipped.has(name)) : names;
  return (req) => {
    const names = choose(req);
    return names instanceof Promise ? names.then(without) : without(names);
  };
}

/**
 * The request options of a route's handler (no policies yet): the module's per-request options,
 * the route's `cost`, `denyList` and settle options over the module's. `skips`: the route settles
 * failed or successful requests to 0 (then the module's `requestWasSuccessful` serves it; else it
 * is dropped unless the route set its own).
 */
export function routeRequestOptions<Req>(
  module: Readonly<Record<string, unknown>>,
  route: RouteLimit<Req> | undefined,
): { readonly options: OptionsOf<typeof HTTP_OPTIONS, Req>; readonly skips: boolean } {
  const options: Record<string, unknown> = {};
  for (const name of PER_REQUEST_OPTIONS) if (module[name] !== undefined) options[name] = module[name];
  const cost = route?.cost ?? module.cost;
  if (cost !== undefined) options.cost = cost;
  const denyList = route?.denyList ?? module.denyList;
  if (denyList !== undefined) options.denyList = denyList;
  for (const name of SETTLE_OPTION_NAMES) {
    const value = route?.settling?.[name] ?? module[name];
    if (value !== undefined) options[name] = value;
  }
  const skips = options.skipFailedRequests === true || options.skipSuccessfulRequests === true;
  if (!skips && route?.settling?.requestWasSuccessful === undefined) delete options.requestWasSuccessful;
  return { options: options as OptionsOf<typeof HTTP_OPTIONS, Req>, skips };
}
