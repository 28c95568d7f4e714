/** A route's own options (`config: { rateLimit: {...} }`) merged over the plugin's. */
import type { FastifyRouteRateLimitOptions } from './plugin.js';

/**
 * The plugin's options with the route's over them, key by key. A route that says which policies
 * apply replaces the plugin's way of saying it: `limit` + `window` drop the plugin's `policies`
 * and `limiter`; `policies` or `limiter` drop the plugin's shorthand (`policies` as names then
 * pick from the plugin's `limiter`); a route's own `limiter` drops the plugin's `store`,
 * `prefix` and `failMode`, which belong to a limiter.
 */
export function routeRateLimitOptions(
  plugin: FastifyRouteRateLimitOptions,
  route: FastifyRouteRateLimitOptions,
): FastifyRouteRateLimitOptions {
  const merged: FastifyRouteRateLimitOptions = { ...plugin };
  const shorthand = route.limit !== undefined || route.window !== undefined;
  if (shorthand || route.policies !== undefined || route.limiter !== undefined) {
    merged.limit = undefined;
    merged.window = undefined;
    merged.algorithm = undefined;
  }
  if (shorthand) {
    merged.policies = undefined;
    merged.limiter = undefined;
  }
  if (route.limiter !== undefined) {
    merged.store = undefined;
    merged.prefix = undefined;
    merged.failMode = undefined;
  }
  return { ...merged, ...route };
}
