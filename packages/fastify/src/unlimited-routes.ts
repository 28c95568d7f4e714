/** The startup report of the routes of the app that the plugin's hook does not reach. */
import { isLogger, warnRoutesNotLimited } from '@sluice/core/adapter';
import type { FastifyInstance } from 'fastify';

/** The plugin's hook's name: Fastify's route listing names hooks by their function's name. */
export const HOOK_NAME = 'sluiceRateLimitHook';

const FIX =
  'Move them into the group, or register the plugin in their scope too (at the root it limits every route).';

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
 * and lists them only as text (`printRoutes`): a tree of path segments, a node's routes on its
 * line and the lines after it, each with its hook lists below.
 */
function routesWithoutHook(fastify: FastifyInstance, prefix: string): string[] {
  const listing = fastify.printRoutes({ includeMeta: ['onRequest', 'preHandler'] });
  const folder = prefix.endsWith('/') ? prefix : `${prefix}/`; // '/api' holds '/api/x', not '/apiary'
  const segments: string[] = []; // from the root to the current node
  const routes: string[] = [];
  let route: string[] | undefined; // the current line's, until a hook list names the plugin's
  for (const line of `${listing}\n`.split('\n')) {
    const node = /^((?:[│ ] {3})*)[├└]── (.*)$/u.exec(line);
    const item = node?.[2] ?? line.replace(/^[│ ]+/u, '');
    if (item.startsWith('• ')) {
      if (item.includes(`"${HOOK_NAME}()"`)) route = undefined;
      continue;
    }
    if (route !== undefined) routes.push(...route);
    const [, label = item, methods, constraints = ''] =
      /^(.+?) \(([A-Z-]+(?:, [A-Z-]+)*)\)( .+)?$/u.exec(item) ?? [];
    if (node?.[1] !== undefined) segments.splice(node[1].length / 4, Infinity, label);
    const pattern = segments.join('');
    const shown = methods?.split(', ').filter((method, _, all) => method !== 'HEAD' || !all.includes('GET'));
    const under = shown !== undefined && (pattern === prefix || pattern.startsWith(folder));
    route = under ? shown.map((method) => `${method} ${pattern}${constraints}`) : undefined;
  }
  return routes;
}
