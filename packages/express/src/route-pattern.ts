/** The matched Express route pattern, with the mount path of the router it lives in. */
import { normalizePath } from '@sluice/core/adapter';
import type { Request } from 'express';

/**
 * The route pattern Express matched for this request, e.g. `/api/transfers/:id`.
 *
 * `req.route` is set only once Express has matched a route, so this is known when the
 * middleware is attached to a route (`app.post('/transfers/:id', rateLimit(...), handler)`)
 * and `undefined` when it runs as app-level middleware (`app.use(rateLimit(...))`), which
 * Express calls before routing. Core then folds ids in the raw path to `:id`.
 * Mount paths (`req.baseUrl`) are raw request text, so they are normalized the same way.
 * Regular-expression and array routes give `undefined` too.
 */
export function routePattern(req: Request): string | undefined {
  const path: unknown = req.route?.path;
  if (typeof path !== 'string') return undefined;
  const base = req.baseUrl ? normalizePath(req.baseUrl).replace(/\/+$/, '') : '';
  if (base === '') return path === '' ? '/' : path;
  return path === '/' || path === '' ? base : base + path;
}
