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
  const method: unknown = reflector.get(METHOD_METADATA, handler as () => unknown);
  if (typeof method !== 'number' || method === RequestMethod.ALL) return requestMethod.toUpperCase();
  return RequestMethod[method] ?? requestMethod.toUpperCase();
}
