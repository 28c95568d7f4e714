/** The startup report of the routes of the app that the plugin's hook does not reach. */
import { isLogger, warnRoutesNotLimited } from '@sluice/core';
import type { FastifyInstance } from 'fastify';

/** The plugin's hook's name: Fastify's route listing names hooks by their function's name. */
export const HOOK_NAME = 'sluiceRateLimitHook';

const FIX = 'Register the rate-limit plugin before the plugins that declare them, or inside their scope.';

/**
 * Reports (`SLUICE_ROUTES_NOT_LIMITED`) the routes under a scope's prefix that no Sluice hook
 * reaches: those of other scopes. The root reaches every route (Fastify gives an instance's
 * hooks to its plugins, loaded before or after), and an unprefixed group cannot tell its routes
 * from the app's, so both report nothing.
 */
export function reportRoutesNotReached(fastify: FastifyInstance, logger: unknown): void {
  if (fastify.prefix === '') return;
  const reporter = { adapter: 'fastify', logger: isLogger(logger) ? logger : undefined };
  warnRoutesNotLimited(reporter, routesWithoutHook(fastify, fastify.prefix), FIX);
}

/**
 * The app's routes under `prefix` whose onRequest and preHandler hooks hold no Sluice hook, as
 * `METHOD pattern` (a GET's HEAD left out). Fastify keeps routes and their hooks in its router
 * and lists them only as text (`printRoutes`): one route a line, its hook lists on the next.
 */
function routesWithoutHook(fastify: FastifyInstance, prefix: string): string[] {
  const listing = fastify.printRoutes({ includeMeta: ['onRequest', 'preHandler'], commonPrefix: false });
  const routes: string[] = [];
  let route: string | undefined;
  const folder = prefix.endsWith('/') ? prefix : `${prefix}/`; // '/api' holds '/api/x', not '/apiary'
  for (const line of `${listing}\n`.split('\n')) {
    const item = line.replace(/^[│├└─ ]+/u, '');
    if (item.startsWith('• ')) {
      if (item.includes(`"${HOOK_NAME}()"`)) route = undefined;
      continue;
    }
    if (route !== undefined) routes.push(route);
    const [, pattern, methods] = /^(.+?) \(([A-Z-]+(?:, [A-Z-]+)*)\)/u.exec(item) ?? [];
    const shown = methods?.split(', ').filter((method, _, all) => method !== 'HEAD' || !all.includes('GET'));
    const under = pattern !== undefined && (pattern === prefix || pattern.startsWith(folder));
    route = under ? `${shown?.join(',')} ${pattern}` : undefined;
  }
  return routes;
}
