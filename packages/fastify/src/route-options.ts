import type { FastifyRouteRateLimitOptions as Options } from './plugin.js';

/**
 * A route's own options (`config: { rateLimit: {...} }`) over the plugin's. A route that says which policies apply
 * replaces the plugin's way of saying it: `limit` + `window` drop the plugin's `policies` and
 * `limiter`; `policies` or `limiter` drop its shorthand (`policies` as names then pick from the
 * plugin's `limiter`); a route's own `limiter` drops `store`, `prefix` and `failMode`.
 */
export function routeRateLimitOptions(plugin: Options, route: Options): Options {
  const merged: Options = { ...plugin };
  const shorthand = route.limit !== undefined || route.window !== undefined;
  if (shorthand || route.policies !== undefined || route.limiter !== undefined) {
    merged.limit = merged.window = merged.algorithm = undefined;
  }
  if (shorthand) merged.policies = merged.limiter = undefined;
  if (route.limiter !== undefined) merged.store = merged.prefix = merged.failMode = undefined;
  return { ...merged, ...route };
}
