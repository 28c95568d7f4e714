/** The route pattern @koa/router matched for a request. */
import type { Context } from 'koa';

/** What @koa/router keeps of a matched layer. */
interface RouterLayer {
  readonly path?: unknown;
  readonly methods?: readonly string[];
}

/**
 * The pattern @koa/router matched, e.g. `/transfers/:id` (router prefixes included): the last
 * route in `ctx.matched` that serves the request's method, the way the router itself picks
 * `ctx._matchedRoute`. Reading `ctx.matched` rather than `ctx._matchedRoute` keeps
 * `router.use(rateLimit(...))` right: while a `use` layer runs, `_matchedRoute` holds that
 * layer's path expression, not the route's.
 *
 * `undefined` when no route is known: the middleware runs before the router
 * (`app.use(rateLimit(...))`), no route serves this method, or the route is a regular
 * expression. Core then folds ids in the raw path to `:id`.
 */
export function matchedRoute(ctx: Context): string | undefined {
  const routed = ctx as Context & { matched?: unknown; _matchedRoute?: unknown };
  if (Array.isArray(routed.matched)) {
    const method = ctx.method.toUpperCase();
    const layers = routed.matched as readonly RouterLayer[];
    for (let i = layers.length - 1; i >= 0; i--) {
      const layer = layers[i];
      if (layer?.methods && layer.methods.length > 0 && layer.methods.includes(method)) {
        return typeof layer.path === 'string' && layer.path !== '' ? layer.path : undefined;
      }
    }
    return undefined;
  }
  // Routers that do not record `ctx.matched`.
  const pattern = routed._matchedRoute;
  return typeof pattern === 'string' && pattern !== '' ? pattern : undefined;
}
