/**
 * The schema of the options one framework's surface adds (`onLimited`, Hono's `identityHeader`,
 * the Nest module's `defaultPolicies`, the fields of a Nest route's own policy). Their value
 * types name framework types, so each adapter declares the field; the entry holds the rest.
 */
import { OPTION_DEFAULTS } from './defaults.js';
import { isBoolean, isFunction, MIDDLEWARE, option } from './option.js';

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Options a framework adds to the shared ones. */
export const FRAMEWORK_OPTIONS = Object.freeze({
  /** Replace the default problem+json response for denied (429) and unavailable (503) requests. */
  onLimited: option<unknown>({
    default: undefined,
    defaultDoc: 'problem+json body',
    doc: 'Replace the 429/503 response; the rate-limit headers are already set.',
    surfaces: MIDDLEWARE,
    check: isFunction,
  }),
  /** A request header carrying the identity, as kind `key` (only behind a step that authenticated it). */
  identityHeader: option<string>({
    default: undefined,
    defaultDoc: '-',
    doc: 'A request header holding the identity (kind `key`), used when `identity` is not given.',
    surfaces: ['hono'],
    check: (value, fail) =>
      typeof value === 'string' && HEADER_NAME.test(value) ? value : fail('must be a header name'),
  }),
  /** The client address, the identity when neither `identity` nor `identityHeader` gives one. */
  clientIp: option<unknown>({
    default: undefined,
    defaultDoc: '-',
    doc: 'The client address: a function of the context (Hono has no portable one).',
    surfaces: ['hono'],
    check: isFunction,
  }),
  /**
   * Names of the policies applied to routes without `@RateLimit()`; default every module policy.
   * A function of the request (sync or async) chooses them per request.
   */
  defaultPolicies: option<readonly string[] | ((req: unknown) => unknown)>({
    default: undefined,
    defaultDoc: 'every module policy',
    doc: 'Policy names applied to routes without `@RateLimit()` (or a function of the request); `[]` limits only decorated routes.',
    surfaces: ['nestjs-module'],
    check: (value, fail) =>
      typeof value === 'function' || (Array.isArray(value) && value.every((name) => typeof name === 'string'))
        ? value
        : fail('must be an array of policy names or a function'),
  }),
  /** Register the module globally, so `RateLimitGuard` resolves in every module. */
  isGlobal: option<boolean>({
    default: OPTION_DEFAULTS.isGlobal,
    defaultDoc: `\`${OPTION_DEFAULTS.isGlobal}\``,
    doc: 'Register the module globally.',
    surfaces: ['nestjs-module'],
    check: isBoolean,
  }),
  /** Rate of a route's own policy (`'10/s'`), instead of `limit` + `window`. */
  rate: option<unknown>({
    default: undefined,
    defaultDoc: '-',
    doc: "Rate of the route's own policy, instead of `limit` + `window`.",
    surfaces: ['nestjs-decorator'],
  }),
  /** Bucket capacity of a route's own token-bucket or GCRA policy. */
  burst: option<number>({
    default: undefined,
    defaultDoc: '-',
    doc: "Bucket capacity of the route's own policy.",
    surfaces: ['nestjs-decorator'],
  }),
  /** Scope of a route's own policy: `'route'` (one budget per route, the default) or `'identity'`. */
  scope: option<'identity' | 'route'>({
    default: OPTION_DEFAULTS.routeScope,
    defaultDoc: `'${OPTION_DEFAULTS.routeScope}'`,
    doc: "Scope of the route's own policy.",
    surfaces: ['nestjs-decorator'],
  }),
  /** Name of a route's own policy; default `<Controller>.<handler>` (`<Controller>` on a controller). */
  name: option<string>({
    default: undefined,
    defaultDoc: '`<Controller>.<handler>`',
    doc: "Name of the route's own policy.",
    surfaces: ['nestjs-decorator'],
  }),
});
