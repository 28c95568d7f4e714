/**
 * The options every adapter shares (`rateLimit({...})` in Express, Koa and Hono, the Nest
 * module), validated once at construction, and the limiter they resolve to.
 */
import { createLimiter, type Limiter } from '../limiter/index.js';
import { isCompiledPolicy } from '../policy/index.js';
import type { Algorithm, FailMode, IdentityInput, PolicyInput, Store } from '../types.js';
import { CidrError, createIpList, type IpList } from './cidr.js';
import { createDecide, type DecideResult, type RequestFacts, type RequestMarks } from './decide.js';
import { HEADER_FORMATS, type HeaderFormat } from './headers.js';
import { ADAPTER_OPTION_NAMES, checkOptionNames, closestName } from './option-names.js';
import { RateLimitOptionsError } from './options-error.js';
import { storeProblem } from './store-check.js';

/** Per-request cost: a number for every policy, or per policy name. */
export type CostValue = number | Readonly<Record<string, number>>;

/** Options shared by every adapter. */
export interface RateLimitOptions<Req> {
  /** Share one limiter across routes; `policies` then names which of its policies apply here. */
  limiter?: Limiter;
  /** Names select from `limiter`; policy inputs build a limiter for this middleware. */
  policies?: readonly (PolicyInput | string)[];
  /** Shorthand with `window`: one policy named `default` (token bucket unless `algorithm` says otherwise). */
  limit?: number;
  /** Shorthand with `limit`: `'1m'`, `'10s'` or milliseconds. */
  window?: string | number;
  /** Algorithm of the shorthand policy; default `'token-bucket'`, as for every policy (`POLICY_DEFAULTS`). */
  algorithm?: Algorithm;
  /** Store of the limiter built here; default a `MemoryStore`. */
  store?: Store;
  /** Key prefix of the limiter built here; default `'sluice'`. */
  prefix?: string;
  /** Fail mode of the shorthand policy, and the default for policy inputs without one. */
  failMode?: FailMode;
  /**
   * Who is limited. Default: the client IP (kind `ip`, IPv6 grouped by `ipv6Subnet`). Return a
   * string for the app's own id (kind `app`: a tenant, a user) or `{ kind: 'key', value }` for
   * a credential such as an API key; kinds never share state, so an API key spelled like an
   * address is not that client. Returning `undefined` (or an empty value) falls back to the IP.
   * A header is only as trustworthy as the authentication in front of it: return a key only
   * once it has been verified.
   */
  identity?: (req: Req) => IdentityInput | undefined | Promise<IdentityInput | undefined>;
  /** Units to charge: a number, per policy name, or a function of the request. */
  cost?: CostValue | ((req: Req) => CostValue | Promise<CostValue>);
  /** `true` lets the request through unlimited, with no headers and no charge. */
  skip?: (req: Req) => boolean | Promise<boolean>;
  /** Header format, default `'draft-10'`. */
  headers?: HeaderFormat;
  /** Show shadow policies in the headers too (default false). */
  shadowHeaders?: boolean;
  /** Force shadow mode for every policy used here: decide and record, never deny. */
  shadow?: boolean;
  /** Prefix length grouping IPv6 clients in the default identity; default 56, `false` for whole addresses. */
  ipv6Subnet?: number | false;
  /**
   * Client IPs never limited (like `skip`): CIDR ranges, addresses, the names `loopback`,
   * `linklocal`, `uniquelocal`, or an `IpList`. Matched against the adapter's client IP.
   */
  allowList?: readonly string[] | IpList;
}

/** Options validated, the limiter built, and `decide` ready for the request path. */
/** How an adapter wants core to treat its request objects (`resolveRateLimitOptions`' third argument). */
export interface ResolvedRateLimitSettings {
  /**
   * Where `decide` keeps the checks made for a request marker (double-count protection).
   * `'private-field'` (default): a private field on the marker, the cheapest on objects of a
   * class with a stable shape (Hono's `Context`). `'weak-map'`: a `WeakMap` beside it, the
   * cheapest on objects whose shape V8 builds anew per request (Express's `req`), where
   * adding any property costs about 20k instructions. The app sees neither, and layers that
   * use different settings still find each other's checks.
   */
  readonly requestMarks?: RequestMarks;
  /**
   * Every option name the adapter takes, its own included, for the "did you mean" of an
   * unknown name. Default `ADAPTER_OPTION_NAMES`.
   */
  readonly optionNames?: readonly string[];
}

const REQUEST_MARKS: readonly RequestMarks[] = ['private-field', 'weak-map'];

export interface ResolvedRateLimit<Req> {
  /** The adapter these options were resolved for (`express`, `koa`, `hono`, `nestjs`). */
  readonly adapter: string;
  readonly limiter: Limiter;
  /** The limiter's policies that apply here, or undefined for all of them. */
  readonly policyNames: readonly string[] | undefined;
  readonly headerFormat: HeaderFormat;
  readonly shadowHeaders: boolean;
  /** Shadow forced by the `shadow` option. */
  readonly shadow: boolean;
  readonly ipv6Subnet: number | false;
  /** The identity function, or undefined for the default (the client IP). */
  readonly identity:
    | ((req: Req) => IdentityInput | undefined | Promise<IdentityInput | undefined>)
    | undefined;
  /** The cost as given (number, record or function), or undefined for the policies' own. */
  readonly cost: CostValue | ((req: Req) => CostValue | Promise<CostValue>) | undefined;
  readonly skip: ((req: Req) => boolean | Promise<boolean>) | undefined;
  /** IPs never limited, or undefined. */
  readonly allowList: IpList | undefined;
  /**
   * Decides one request: skip, identity, cost, `limiter.check`, `toHttpVerdict`.
   * Resolves to `undefined` when `skip(req)` is true or the client IP is in `allowList`:
   * call next(), set nothing.
   * A request already checked by the same limiter and policy set (the same `facts.marker`,
   * by default `req` itself) is not charged again: the first decision comes back, with
   * `duplicate: true`. Rejects only for programmer errors (a throwing identity, skip or
   * cost function, an invalid cost); store failures are decisions (`unavailable`).
   */
  decide(req: Req, facts: RequestFacts): Promise<DecideResult | undefined>;
}

const FAIL_MODES: readonly FailMode[] = ['closed', 'open', 'local'];

function isPositiveNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0;
}

function optionalFunction(options: Record<string, unknown>, name: string): void {
  const value = options[name];
  if (value !== undefined && typeof value !== 'function') {
    throw new RateLimitOptionsError(name, value, 'must be a function');
  }
}

function optionalBoolean(options: Record<string, unknown>, name: string): boolean {
  const value = options[name];
  if (value !== undefined && typeof value !== 'boolean') {
    throw new RateLimitOptionsError(name, value, 'must be true or false');
  }
  return value === true;
}

function validateCost(cost: unknown): void {
  if (cost === undefined || typeof cost === 'function' || isPositiveNumber(cost)) return;
  if (typeof cost === 'object' && cost !== null && !Array.isArray(cost)) {
    for (const [policy, units] of Object.entries(cost)) {
      if (!isPositiveNumber(units)) {
        throw new RateLimitOptionsError(`cost.${policy}`, units, 'must be a positive, finite number');
      }
    }
    return;
  }
  throw new RateLimitOptionsError(
    'cost',
    cost,
    'must be a positive number, a record of them per policy, or a function',
  );
}

function describeFormats(): string {
  return HEADER_FORMATS.map(String)
    .join(', ')
    .replace(/, false$/, ' or false');
}

/**
 * Validates adapter options and builds (or selects from) the limiter. Every problem throws
 * here, naming the option and the value (`rateLimit: "limit" must be a positive integer,
 * got -1`); policy problems throw the limiter's `PolicyError`.
 *
 * Three ways to say which policies apply:
 * - `limiter` (shared), optionally with `policies` naming some of its policies;
 * - `policies` as policy inputs: a limiter is built here (with `store`, `prefix`);
 * - `limit` + `window`: one policy named `default` (`algorithm`, default token-bucket as
 *   for every policy: `POLICY_DEFAULTS.algorithm`).
 *
 * @param options the adapter's options, without its own extras (`onLimited` etc.)
 * @param adapter the adapter's name, for messages
 */
export function resolveRateLimitOptions<Req>(
  options: RateLimitOptions<Req>,
  adapter: string,
  settings: ResolvedRateLimitSettings = {},
): ResolvedRateLimit<Req> {
  const requestMarks = settings.requestMarks ?? 'private-field';
  if (!REQUEST_MARKS.includes(requestMarks)) {
    throw new TypeError(
      `resolveRateLimitOptions: "requestMarks" must be 'private-field' or 'weak-map', got ${String(requestMarks)}`,
    );
  }
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new RateLimitOptionsError('options', options, 'must be an object');
  }
  const o = options as Record<string, unknown>;
  checkOptionNames(o, settings.optionNames ?? ADAPTER_OPTION_NAMES, `${adapter} rateLimit()`);

  optionalFunction(o, 'identity');
  optionalFunction(o, 'skip');
  validateCost(options.cost);
  const headerFormat = options.headers ?? 'draft-10';
  if (!HEADER_FORMATS.includes(headerFormat)) {
    throw new RateLimitOptionsError('headers', options.headers, `must be one of ${describeFormats()}`);
  }
  const shadowHeaders = optionalBoolean(o, 'shadowHeaders');
  const shadow = optionalBoolean(o, 'shadow');
  const ipv6Subnet = options.ipv6Subnet ?? 56;
  if (ipv6Subnet !== false && (!Number.isInteger(ipv6Subnet) || ipv6Subnet < 1 || ipv6Subnet > 128)) {
    throw new RateLimitOptionsError(
      'ipv6Subnet',
      options.ipv6Subnet,
      'must be an integer from 1 to 128 or false',
    );
  }
  let allowList: IpList | undefined;
  if (options.allowList !== undefined) {
    const list = options.allowList as unknown;
    if (
      typeof list === 'object' &&
      list !== null &&
      !Array.isArray(list) &&
      typeof (list as IpList).has === 'function'
    ) {
      allowList = list as IpList;
    } else if (Array.isArray(list)) {
      try {
        allowList = createIpList(list as string[]);
      } catch (error) {
        if (error instanceof CidrError)
          throw new RateLimitOptionsError('allowList', error.entry, error.reason);
        throw error;
      }
    } else {
      throw new RateLimitOptionsError('allowList', list, 'must be an array of CIDR ranges or an IpList');
    }
  }
  if (options.failMode !== undefined && !FAIL_MODES.includes(options.failMode)) {
    throw new RateLimitOptionsError('failMode', options.failMode, `must be one of ${FAIL_MODES.join(', ')}`);
  }
  if (options.policies !== undefined) {
    if (!Array.isArray(options.policies) || options.policies.length === 0) {
      throw new RateLimitOptionsError(
        'policies',
        options.policies,
        'must be a non-empty array of policy names or policies',
      );
    }
  }
  const shorthand = options.limit !== undefined || options.window !== undefined;
  if (shorthand && (options.policies !== undefined || options.limiter !== undefined)) {
    throw new RateLimitOptionsError(
      options.limit !== undefined ? 'limit' : 'window',
      options.limit ?? options.window,
      'cannot be combined with "policies" or "limiter" (the shorthand defines the only policy)',
    );
  }
  if (options.algorithm !== undefined && !shorthand) {
    throw new RateLimitOptionsError(
      'algorithm',
      options.algorithm,
      'applies to the "limit" + "window" shorthand only',
    );
  }

  let limiter: Limiter;
  // A shared limiter (or a compiled policy) cannot carry shadow itself: shadow each decision.
  let shadowPerDecision = shadow && options.limiter !== undefined;
  let policyNames: readonly string[] | undefined;
  if (options.limiter !== undefined) {
    const shared = options.limiter as Partial<Limiter> | null;
    if (typeof shared !== 'object' || shared === null || typeof shared.check !== 'function') {
      throw new RateLimitOptionsError('limiter', options.limiter, 'must be a limiter from createLimiter()');
    }
    for (const name of ['store', 'prefix', 'failMode'] as const) {
      if (options[name] !== undefined) {
        throw new RateLimitOptionsError(
          name,
          options[name],
          'belongs to the shared "limiter" (set it there)',
        );
      }
    }
    limiter = options.limiter;
    if (options.policies !== undefined) {
      const known = limiter.policies.map((p) => p.name);
      const names: string[] = [];
      for (const entry of options.policies) {
        if (typeof entry !== 'string') {
          throw new RateLimitOptionsError(
            'policies',
            entry,
            "must name the shared limiter's policies (define new policies in createLimiter())",
          );
        }
        if (!known.includes(entry)) {
          const closest = closestName(entry, known);
          throw new RateLimitOptionsError(
            'policies',
            entry,
            `must name a policy of the limiter (${known.join(', ')})${closest === undefined ? '' : `: did you mean "${closest}"?`}`,
          );
        }
        if (!names.includes(entry)) names.push(entry);
      }
      policyNames = names;
    }
  } else {
    let inputs: PolicyInput[];
    if (options.policies !== undefined) {
      inputs = options.policies.map((entry) => {
        if (typeof entry === 'string') {
          throw new RateLimitOptionsError(
            'policies',
            entry,
            'names a policy, which needs a shared "limiter"',
          );
        }
        if (typeof entry !== 'object' || entry === null) {
          throw new RateLimitOptionsError('policies', entry, 'must hold policy names or policies');
        }
        return entry;
      });
    } else if (shorthand) {
      const { limit, window } = options;
      if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit <= 0) {
        throw new RateLimitOptionsError('limit', limit, 'must be a positive integer');
      }
      if (window === undefined) {
        throw new RateLimitOptionsError(
          'window',
          window,
          "is required with \"limit\" (e.g. '1m', '10s' or milliseconds)",
        );
      }
      inputs = [
        {
          name: 'default',
          ...(options.algorithm !== undefined && { algorithm: options.algorithm }),
          limit,
          window,
        },
      ];
    } else {
      throw new RateLimitOptionsError(
        'policies',
        undefined,
        'is required: give "policies", "limit" and "window", or a shared "limiter"',
      );
    }
    if (options.store !== undefined) {
      const problem = storeProblem(options.store);
      if (problem !== undefined) throw new RateLimitOptionsError('store', options.store, problem);
    }
    inputs = inputs.map((input) => {
      let p = input;
      if (options.failMode !== undefined && p.failMode === undefined)
        p = { ...p, failMode: options.failMode };
      if (shadow && p.shadow !== true) {
        // A policy from definePolicy() cannot be re-validated with changes: shadow its decisions instead.
        if (isCompiledPolicy(p)) shadowPerDecision = true;
        else p = { ...p, shadow: true };
      }
      return p;
    });
    limiter = createLimiter({
      policies: inputs,
      ...(options.store !== undefined && { store: options.store }),
      ...(options.prefix !== undefined && { prefix: options.prefix }),
    });
  }

  const identity = options.identity;
  const cost = options.cost;
  const skip = options.skip;
  const decide = createDecide<Req>({
    adapter,
    limiter,
    policyNames,
    headerFormat,
    shadowHeaders,
    shadowDecisions: shadowPerDecision,
    ipv6Subnet,
    identity,
    cost,
    skip,
    allowList,
    requestMarks,
  });
  return {
    adapter,
    limiter,
    policyNames,
    headerFormat,
    shadowHeaders,
    shadow,
    ipv6Subnet,
    identity,
    cost,
    skip,
    allowList,
    decide,
  };
}
