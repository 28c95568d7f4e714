/** Finds the route pattern Hono matched for a request, for the route key. */
import type { Context } from 'hono';
import { matchedRoutes } from 'hono/route';

/** Hono's method name for routes registered with `app.use()` / `app.all()`. */
const ANY_METHOD = 'ALL';

/**
 * The pattern of the route that will answer this request (`/transfers/:id`), read from
 * Hono's match result, never from the URL.
 *
 * From the running middleware onwards, the first route registered for a concrete method
 * (`app.get`, `app.post`, `app.on`) wins; failing that, the last matched route whose
 * pattern has no wildcard (`app.all('/x')`). Returns `undefined` when only wildcard
 * middleware matched (a 404, or an app that routes by itself); core then folds ids in
 * the raw path to `:id`.
 *
 * @param c the request's context
 * @returns the matched pattern, or undefined
 */
export function matchedPattern(c: Context): string | undefined {
  const routes = matchedRoutes(c);
  const start = Math.max(0, c.req.routeIndex);
  for (let i = start; i < routes.length; i++) {
    const route = routes[i];
    if (route !== undefined && route.method !== ANY_METHOD) return route.path;
  }
  for (let i = routes.length - 1; i >= start; i--) {
    const route = routes[i];
    if (route !== undefined && !route.path.includes('*')) return route.path;
  }
  return undefined;
}
