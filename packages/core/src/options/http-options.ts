/** The schema of the options every adapter shares (`RateLimitOptions`): one entry per option. */

import { isValidPrefix } from '../keys/build-keys.js';
import type { Limiter } from '../limiter/limiter.js';
import type { ResponseFacts } from '../model/response-facts.js';
import { FAIL_MODES } from '../policy/defaults.js';
import type { Algorithm, FailMode, IdentityInput, PolicyInput, Store } from '../types.js';
import type { IpList } from './cidr.js';
import { HEADER_FORMATS, type HeaderFormat, OPTION_DEFAULTS } from './defaults.js';
import type { DenyListInput } from './deny-list.js';
import { checkAllowList, checkDenyList } from './list-checks.js';
import { LOGGER_OPTION } from './logger-option.js';
import {
  isBoolean,
  isFunction,
  MIDDLEWARE,
  type OptionFail,
  type OptionSurface,
  option,
  positiveInteger,
  type RequestOf,
} from './option.js';
import { storeProblem } from './store-check.js';

/** Per-request cost: a number for every policy, or per policy name. */
export type CostValue = number | Readonly<Record<string, number>>;

const HTTP: readonly OptionSurface[] = [...MIDDLEWARE, 'nestjs-module'];
const ROUTE: readonly OptionSurface[] = [...HTTP, 'nestjs-decorator'];

function isPositiveNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0;
}

function checkCost(cost: unknown, fail: OptionFail): unknown {
  if (typeof cost === 'function' || isPositiveNumber(cost)) return cost;
  if (typeof cost === 'object' && cost !== null && !Array.isArray(cost)) {
    for (const [policy, units] of Object.entries(cost)) {
      if (!isPositiveNumber(units)) fail('must be a positive, finite number', `cost.${policy}`, units);
    }
    return cost;
  }
  return fail('must be a positive number, a record of them per policy, or a function');
}

const describeFormats = (): string =>
  HEADER_FORMATS.map(String)
    .join(', ')
    .replace(/, false$/, ' or false');

/**
 * The options `rateLimit()` of Express, Koa and Hono and the Nest module share, in the order
 * the READMEs list them. The JSDoc of each entry is the JSDoc of the option's field.
 */
export const HTTP_OPTIONS = Object.freeze({
  /**
   * Shorthand with `window`: one policy named `default` (token bucket unless `algorithm` says
   * otherwise). A function of the request (sync or async) chooses the limit per request; each
   * limit it answers is compiled once (a bounded cache), and a throw or a bad answer makes that
   * request `unavailable` under `failMode`.
   */
  limit: option<number | ((req: RequestOf) => number | Promise<number>)>({
    default: undefined,
    defaultDoc: '-',
    doc: 'Shorthand: one policy named `default`, `limit` requests per `window`; or a function of the request.',
    surfaces: ROUTE,
    check: (value, fail) => (typeof value === 'function' ? value : positiveInteger(value, fail)),
  }),
  /** Shorthand with `limit`: `'1m'`, `'10s'` or milliseconds. */
  window: option<string | number>({
    default: undefined,
    defaultDoc: '-',
    doc: "The shorthand's window: `'1m'`, `'10s'` or milliseconds.",
    surfaces: ROUTE,
  }),
  /** Algorithm of the shorthand policy; default `'token-bucket'`, as for every policy (`OPTION_DEFAULTS`). */
  algorithm: option<Algorithm>({
    default: OPTION_DEFAULTS.algorithm,
    defaultDoc: `'${OPTION_DEFAULTS.algorithm}'`,
    doc: 'Algorithm of the shorthand policy.',
    surfaces: ROUTE,
  }),
  /**
   * Names select from `limiter`; policy inputs build a limiter for this middleware. A function of
   * the request (sync or async) chooses per request: names of the shared `limiter`'s policies, or
   * (without one) policy inputs, compiled once per list. A throw or a bad answer makes that
   * request `unavailable` (see docs/policy-changes.md for its fail mode).
   */
  policies: option<
    | readonly (PolicyInput | string)[]
    | ((req: RequestOf) => readonly (PolicyInput | string)[] | Promise<readonly (PolicyInput | string)[]>)
  >({
    default: undefined,
    defaultDoc: '-',
    doc: "Policy objects (a limiter is built here), or names of the shared `limiter`'s policies; or a function of the request.",
    surfaces: ['createLimiter', ...ROUTE],
    check: (value, fail) =>
      typeof value === 'function' || (Array.isArray(value) && value.length > 0)
        ? value
        : fail('must be a non-empty array of policy names or policies, or a function'),
  }),
  /** Share one limiter across routes; `policies` then names which of its policies apply here. */
  limiter: option<Limiter>({
    default: undefined,
    defaultDoc: '-',
    doc: 'A shared limiter from `createLimiter()`.',
    surfaces: HTTP,
    check: (value, fail) => {
      const shared = value as Partial<Limiter> | null;
      if (typeof shared !== 'object' || shared === null || typeof shared.check !== 'function') {
        fail('must be a limiter from createLimiter()');
      }
      return value;
    },
  }),
  /** Store of the limiter built here; default a `MemoryStore`. */
  store: option<Store>({
    default: undefined,
    defaultDoc: '`new MemoryStore()`',
    doc: 'Where state lives, for a limiter built here.',
    surfaces: ['createLimiter', ...HTTP],
    check: (value, fail) => {
      const problem = storeProblem(value);
      return problem === undefined ? value : fail(problem);
    },
  }),
  /** Key prefix of the limiter built here; default `'sluice'`. */
  prefix: option<string>({
    default: OPTION_DEFAULTS.prefix,
    defaultDoc: `'${OPTION_DEFAULTS.prefix}'`,
    doc: 'Key prefix, for a limiter built here.',
    surfaces: ['createLimiter', ...HTTP],
    // Checked by createLimiter(), which every adapter's own limiter goes through.
    check: (value, fail) =>
      isValidPrefix(value) ? value : fail('must be 1-128 characters without whitespace, "{" or "}"'),
  }),
  /** Fail mode of the shorthand policy, and the default for policy inputs without one. */
  failMode: option<FailMode>({
    default: OPTION_DEFAULTS.failMode,
    defaultDoc: `'${OPTION_DEFAULTS.failMode}'`,
    doc: 'Fail mode of the shorthand policy and of policies that set none.',
    surfaces: ROUTE,
    check: (value, fail) =>
      FAIL_MODES.includes(value as FailMode) ? value : fail(`must be one of ${FAIL_MODES.join(', ')}`),
  }),
  /**
   * Who is limited. Default: the client IP (kind `ip`, IPv6 grouped by `ipv6Subnet`). Return a
   * string for the app's own id (kind `app`: a tenant, a user) or `{ kind: 'key', value }` for
   * a credential such as an API key; kinds never share state, so an API key spelled like an
   * address is not that client. Returning `undefined` (or an empty value) falls back to the IP.
   * A header is only as trustworthy as the authentication in front of it: return a key only
   * once it has been verified.
   */
  identity: option<(req: RequestOf) => IdentityInput | undefined | Promise<IdentityInput | undefined>>({
    default: undefined,
    defaultDoc: 'client IP',
    doc: 'Who is limited: a function of the request; the client IP when it returns `undefined`.',
    surfaces: HTTP,
    check: isFunction,
  }),
  /** Units to charge: a number, per policy name, or a function of the request. */
  cost: option<CostValue | ((req: RequestOf) => CostValue | Promise<CostValue>)>({
    default: undefined,
    defaultDoc: "each policy's cost (1)",
    doc: 'Units per request: a number, per policy name, or a function of the request.',
    surfaces: ROUTE,
    check: checkCost,
  }),
  /** `true` lets the request through unlimited, with no headers and no charge. */
  skip: option<(req: RequestOf) => boolean | Promise<boolean>>({
    default: undefined,
    defaultDoc: '-',
    doc: 'Return `true` to let a request through uncounted, with no headers.',
    surfaces: HTTP,
    check: isFunction,
  }),
  /**
   * Client IPs never limited (like `skip`): CIDR ranges, addresses, the names `loopback`,
   * `linklocal`, `uniquelocal`, or an `IpList`. Matched against the adapter's client IP.
   */
  allowList: option<readonly string[] | IpList>({
    default: undefined,
    defaultDoc: '-',
    doc: 'Client IPs never limited: CIDR ranges, addresses, range names, or an `IpList`.',
    surfaces: HTTP,
    check: checkAllowList,
  }),
  /**
   * Answered `403 Forbidden` (problem+json, `"error":"forbidden"`) before any policy is
   * charged: client IPs as CIDR ranges (an array), or lists by kind `{ ip, key, app }`
   * (identities of kind `key`, `app`), or a `DenyList` from `createDenyList()` to replace at
   * run time (`denyList.replace(...)`). Requests `skip` or `allowList` exempts are not checked.
   */
  denyList: option<DenyListInput>({
    default: undefined,
    defaultDoc: '-',
    doc: 'Answered 403 before any charge: CIDR ranges, `{ ip, key, app }` lists, or a `DenyList` (replaceable).',
    surfaces: ROUTE,
    check: checkDenyList,
  }),
  /** Header format, default `'draft-10'`. */
  headers: option<HeaderFormat>({
    default: OPTION_DEFAULTS.headers,
    defaultDoc: `'${OPTION_DEFAULTS.headers}'`,
    doc: "Header format: `'draft-10'`, `'draft-7'`, `'draft-6'`, `'legacy'` or `false`.",
    surfaces: HTTP,
    check: (value, fail) =>
      HEADER_FORMATS.includes(value as HeaderFormat) ? value : fail(`must be one of ${describeFormats()}`),
  }),
  /** Force shadow mode for every policy used here: decide and record, never deny. */
  shadow: option<boolean>({
    default: OPTION_DEFAULTS.shadow,
    defaultDoc: `\`${OPTION_DEFAULTS.shadow}\``,
    doc: 'Decide and record, never deny.',
    surfaces: ROUTE,
    check: isBoolean,
  }),
  /** Show shadow policies in the headers too (default false). */
  shadowHeaders: option<boolean>({
    default: OPTION_DEFAULTS.shadowHeaders,
    defaultDoc: `\`${OPTION_DEFAULTS.shadowHeaders}\``,
    doc: 'Send headers for shadow policies too.',
    surfaces: HTTP,
    check: isBoolean,
  }),
  /**
   * Status of a request turned away by a concurrency policy alone (`algorithm: 'concurrency'`): 429
   * (default), or 503 to say the service is overloaded rather than the client over its quota. Either
   * way with `Retry-After` and a problem body.
   */
  concurrencyStatus: option<429 | 503>({
    default: OPTION_DEFAULTS.concurrencyStatus,
    defaultDoc: `\`${OPTION_DEFAULTS.concurrencyStatus}\``,
    doc: 'Status of a request a concurrency policy turned away: 429 or 503.',
    surfaces: HTTP,
    check: (value, fail) => (value === 429 || value === 503 ? value : fail('must be 429 or 503')),
  }),
  /** Prefix length grouping IPv6 clients in the default identity; default 56, `false` for whole addresses. */
  ipv6Subnet: option<number | false>({
    default: OPTION_DEFAULTS.ipv6Subnet,
    defaultDoc: `\`${OPTION_DEFAULTS.ipv6Subnet}\``,
    doc: 'Prefix length grouping IPv6 clients in the default identity; `false` for whole addresses.',
    surfaces: HTTP,
    check: (value, fail) =>
      value === false || (Number.isInteger(value) && (value as number) >= 1 && (value as number) <= 128)
        ? value
        : fail('must be an integer from 1 to 128 or false'),
  }),
  /**
   * The units a request really used, once its response finished or its connection closed: a
   * number for every policy, or a number per policy name (a policy not named keeps what the check
   * charged). The check charges its `cost` as an estimate (a reservation); the difference is
   * refunded or charged in one store call (`limiter.settle`). A failure (a throw, the store) is
   * reported with a warning, never on the request.
   */
  settle: option<(req: RequestOf, response: ResponseFacts) => CostValue | Promise<CostValue>>({
    default: undefined,
    defaultDoc: '-',
    doc: 'Units the request really used, from the request and the response, settled after it ended.',
    surfaces: ROUTE,
    check: isFunction,
  }),
  /** Requests that failed (status >= 400, or the connection closed early) are not counted (settled to 0). */
  skipFailedRequests: option<boolean>({
    default: OPTION_DEFAULTS.skipFailedRequests,
    defaultDoc: `\`${OPTION_DEFAULTS.skipFailedRequests}\``,
    doc: 'Failed requests (see `requestWasSuccessful`) settle to 0: only the others count.',
    surfaces: ROUTE,
    check: isBoolean,
  }),
  /** Requests that succeeded (status < 400) are not counted (settled to 0). */
  skipSuccessfulRequests: option<boolean>({
    default: OPTION_DEFAULTS.skipSuccessfulRequests,
    defaultDoc: `\`${OPTION_DEFAULTS.skipSuccessfulRequests}\``,
    doc: 'Successful requests (see `requestWasSuccessful`) settle to 0: only the others count.',
    surfaces: ROUTE,
    check: isBoolean,
  }),
  /**
   * Whether a request succeeded, for the skip options. Default: the response completed with a
   * status below 400 (a connection closed before the response ended failed).
   */
  requestWasSuccessful: option<(req: RequestOf, response: ResponseFacts) => boolean | Promise<boolean>>({
    default: undefined,
    defaultDoc: 'status < 400, response completed',
    doc: 'Whether a request succeeded, for `skipFailedRequests` and `skipSuccessfulRequests`.',
    surfaces: ROUTE,
    check: isFunction,
  }),
  /** Where coded warnings and errors go: `{ warn(entry), error?(entry) }`; unset: `console.warn`, once per code. */
  logger: LOGGER_OPTION,
});
