/** The route pattern of a Nest handler, from the controller's and the handler's path metadata. */
import { RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants.js';
import { Reflector } from '@nestjs/core';

const reflector = new Reflector();

function firstPath(value: unknown): string {
  const path = Array.isArray(value) ? value[0] : value;
  return typeof path === 'string' ? path : '';
}

/**
 * The pattern Nest registered for a handler: `@Controller('transfers')` + `@Post(':id')`
 * gives `/transfers/:id`. With several paths on one decorator, the first is used. The
 * global prefix and URI versioning are not part of it (they are the same for every route).
 *
 * @param controller the controller class (`context.getClass()`)
 * @param handler the handler function (`context.getHandler()`)
 * @returns the pattern, or undefined when the handler has no path metadata (not an HTTP route)
 */
export function handlerPattern(controller: object, handler: object): string | undefined {
  return routeOf(controller, handler).pattern;
}

function patternOf(controller: object, handler: object): string | undefined {
  const handlerPath: unknown = reflector.get(PATH_METADATA, handler as () => unknown);
  if (handlerPath === undefined) return undefined;
  const segments = [
    firstPath(reflector.get(PATH_METADATA, controller as () => unknown)),
    firstPath(handlerPath),
  ]
    .map((part) => part.replace(/^\/+|\/+$/g, ''))
    .filter((part) => part.length > 0);
  return `/${segments.join('/')}`;
}

/**
 * The HTTP method a handler is registered for (`POST`), or `requestMethod` for `@All()`
 * handlers and handlers without method metadata.
 */
export function handlerMethod(handler: object, requestMethod: string): string {
  let method = methods.get(handler);
  if (method === undefined) {
    method = methodOf(handler);
    methods.set(handler, method);
  }
  return method === null ? requestMethod.toUpperCase() : method;
}

/** The registered method, or null when the request's own method applies. */
function methodOf(handler: object): string | null {
  const method: unknown = reflector.get(METHOD_METADATA, handler as () => unknown);
  if (typeof method !== 'number' || method === RequestMethod.ALL) return null;
  return RequestMethod[method] ?? null;
}

/**
 * Decorator metadata is fixed once the classes are defined, so both lookups are made once per
 * handler (and controller: one method can serve several controller subclasses) rather than
 * once per request.
 */
interface HandlerRoute {
  readonly controller: object;
  readonly pattern: string | undefined;
}
const routes = new WeakMap<object, HandlerRoute>();
const methods = new WeakMap<object, string | null>();

function routeOf(controller: object, handler: object): HandlerRoute {
  let route = routes.get(handler);
  if (route === undefined || route.controller !== controller) {
    route = { controller, pattern: patternOf(controller, handler) };
    routes.set(handler, route);
  }
  return route;
}
