/**
 * The schema of the options one framework's surface adds (`onLimited`, Hono's `identityHeader`,
 * the Nest module's `defaultPolicies`, the fields of a Nest route's own policy). Their value
 * types name framework types, so each adapter declares the field; the entry holds the rest.
 */

import { OPTION_DEFAULTS } from './defaults.js';
import { checkOption, isBoolean, isFunction, MIDDLEWARE, type OptionSurface, option } from './option.js';
import { RateLimitOptionsError } from './options-error.js';

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
  /** The Fastify hook that limits: `'onRequest'` (before parsing) or `'preHandler'` (after authentication hooks). */
  hook: option<'onRequest' | 'preHandler'>({
    default: OPTION_DEFAULTS.fastifyHook,
    defaultDoc: `'${OPTION_DEFAULTS.fastifyHook}'`,
    doc: "The hook that limits: `'onRequest'`, or `'preHandler'` to key after authentication.",
    surfaces: ['fastify'],
    check: (value, fail) =>
      value === 'onRequest' || value === 'preHandler' ? value : fail("must be 'onRequest' or 'preHandler'"),
  }),
  /** Fastify: limit every route of the scope (`true`), or only routes with `config.rateLimit` (`false`). */
  global: option<boolean>({
    default: OPTION_DEFAULTS.fastifyGlobal,
    defaultDoc: `\`${OPTION_DEFAULTS.fastifyGlobal}\``,
    doc: 'Limit every route of the scope; `false`: only routes with their own `config.rateLimit`.',
    surfaces: ['fastify'],
    check: isBoolean,
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

const optionError = (name: string, value: unknown, requirement: string) =>
  new RateLimitOptionsError(name, value, requirement);

/** What the options of a surface must be, when it takes more than an object (Hono: a function too). */
const OPTIONS_SHAPE: Partial<Record<OptionSurface, string>> = {
  hono: 'must be an object, or a function of the context returning one',
};

/** Options of which a surface needs one, and why (Hono has no portable client address). */
const ONE_OF: Partial<Record<OptionSurface, { readonly names: readonly string[]; readonly why: string }>> = {
  hono: {
    names: ['identity', 'identityHeader', 'clientIp'],
    why:
      'is required: give "identity" (a function of the context), "identityHeader" (a header name) or ' +
      '"clientIp" (a function of the context); Hono has no client address that works on every runtime',
  },
};

/**
 * Checks the options a framework adds to the shared ones (the entries above that `surface`
 * takes: `onLimited`, Hono's `identityHeader`, Fastify's `hook`...) and returns each by name,
 * the default for an unset one; and the rules of the surface's options as a whole (an object;
 * Hono: one of `identity`, `identityHeader`, `clientIp`). Throws `RateLimitOptionsError` naming
 * the option and the value; names and the shared options are checked by `createRateLimitHandler`.
 */
export function checkFrameworkOptions(options: unknown, surface: OptionSurface): Record<string, unknown> {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw optionError('options', options, OPTIONS_SHAPE[surface] ?? 'must be an object');
  }
  const given = options as Readonly<Record<string, unknown>>;
  const checked: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(FRAMEWORK_OPTIONS)) {
    if (spec.surfaces.includes(surface)) checked[name] = checkOption(spec, name, given[name], optionError);
  }
  const oneOf = ONE_OF[surface];
  if (oneOf?.names.every((name) => given[name] === undefined) === true) {
    throw optionError(oneOf.names[0]!, undefined, oneOf.why);
  }
  return checked;
}
