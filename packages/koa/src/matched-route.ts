/** The route pattern @koa/router matched for a request. */
import type { Context } from 'koa';

/**
 * The pattern @koa/router matched, e.g. `/transfers/:id` (router prefixes included),
 * read from `ctx._matchedRoute` (or `ctx.routerPath`). It is set once the router has
 * matched, so it is known when the middleware sits on a route
 * (`router.post('/transfers/:id', rateLimit(...), handler)`) and `undefined` when it runs
 * before the router (`app.use(rateLimit(...))`); core then folds ids in the raw path to `:id`.
 * Regular-expression routes give `undefined` too.
 */
export function matchedRoute(ctx: Context): string | undefined {
  const routed = ctx as Context & { _matchedRoute?: unknown; routerPath?: unknown };
  const pattern = routed._matchedRoute ?? routed.routerPath;
  return typeof pattern === 'string' && pattern !== '' ? pattern : undefined;
}
