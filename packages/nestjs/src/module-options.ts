/** The options of `RateLimitModule.forRoot()` / `forRootAsync()`, and the module builder. */
import { ConfigurableModuleBuilder } from '@nestjs/common';
import type {
  Algorithm,
  FailMode,
  Limiter,
  LimiterOptions,
  PolicyInput,
  RateLimitOptions,
  Store,
} from '@sluice/core';

/**
 * The request object the guard sees: Express's `Request` on the Express platform,
 * Fastify's `FastifyRequest` on the Fastify platform. Both have these members.
 */
export interface RateLimitRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly ip?: string;
  [key: string]: unknown;
}

/** Options of `RateLimitModule.forRoot()`. */
export interface RateLimitModuleOptions extends Omit<LimiterOptions, 'policies' | 'store'> {
  /**
   * The module's policies; `@RateLimit('name')` selects among them. Give these, or the
   * `limit` + `window` shorthand, or a `limiter`.
   */
  policies?: readonly PolicyInput[];
  /** Shorthand with `window`: one policy named `default`. */
  limit?: number;
  /** Shorthand with `limit`: `'1m'`, `'10s'` or milliseconds. */
  window?: string | number;
  /** Algorithm of the shorthand policy. Default `'fixed-window'`. */
  algorithm?: Algorithm;
  /** Fail mode of the shorthand policy, and of policies that set none. Default `'closed'`. */
  failMode?: FailMode;
  /** Where state lives. Default: a new `MemoryStore` (one process only). */
  store?: Store;
  /** Bring your own limiter instead of `policies` (its own store and options then apply). */
  limiter?: Limiter;
  /**
   * Names of the policies applied to routes without `@RateLimit()`. Default: every policy
   * of the module. `[]` limits only decorated routes.
   */
  defaultPolicies?: readonly string[];
  /** Who is limited. Default: the client IP (`req.ip`, which honours the platform's trust-proxy setting). */
  identity?: RateLimitOptions<RateLimitRequest>['identity'];
  /** Units charged per request: a number, a record per policy name, or a function of the request. Default: each policy's cost. */
  cost?: RateLimitOptions<RateLimitRequest>['cost'];
  /** Return true to let a request through without a decision. */
  skip?: RateLimitOptions<RateLimitRequest>['skip'];
  /** Header format: `'draft-10'` (default), `'draft-7'`, `'draft-6'`, `'legacy'` or `false`. */
  headers?: RateLimitOptions<RateLimitRequest>['headers'];
  /** Show shadow policies in the headers too. Default false. */
  shadowHeaders?: boolean;
  /** Prefix length grouping IPv6 clients in the default identity. Default 56; `false`: whole addresses. */
  ipv6Subnet?: number | false;
  /**
   * Decide and record, never enforce, for every policy of this module (the policies are
   * built in shadow mode, so metrics report `shadow_over_limit`). Default false.
   */
  shadow?: boolean;
}

/** The module options that go to `createLimiter()` as they are (`prefix`, `timeoutMs`, `clock`...). */
export function limiterOptionsOf(
  options: RateLimitModuleOptions,
): Omit<LimiterOptions, 'policies' | 'store'> {
  const {
    policies: _policies,
    limit: _limit,
    window: _window,
    algorithm: _algorithm,
    failMode: _failMode,
    store: _store,
    limiter: _limiter,
    defaultPolicies: _defaultPolicies,
    identity: _identity,
    cost: _cost,
    skip: _skip,
    headers: _headers,
    shadowHeaders: _shadowHeaders,
    ipv6Subnet: _ipv6Subnet,
    shadow: _shadow,
    ...limiterOptions
  } = options;
  return limiterOptions;
}

/** Extra options of `forRoot()` / `forRootAsync()` that shape the module itself. */
export interface RateLimitModuleExtras {
  /** Register the module globally, so `RateLimitGuard` resolves in every module. Default true. */
  isGlobal?: boolean;
}

const built = new ConfigurableModuleBuilder<RateLimitModuleOptions>({ moduleName: 'RateLimit' })
  .setClassMethodName('forRoot')
  .setExtras<RateLimitModuleExtras>({ isGlobal: true }, (definition, extras) => ({
    ...definition,
    global: extras.isGlobal ?? true,
  }))
  .build();

/** The base class `RateLimitModule` extends: provides `forRoot()` and `forRootAsync()`. */
export const ConfigurableRateLimitModule = built.ConfigurableModuleClass;

/** Injection token of the module options: `@Inject(RATE_LIMIT_MODULE_OPTIONS)`. */
export const RATE_LIMIT_MODULE_OPTIONS = built.MODULE_OPTIONS_TOKEN;

/** Type of the argument of `RateLimitModule.forRoot()`. */
export type RateLimitModuleForRootOptions = typeof built.OPTIONS_TYPE;

/** Type of the argument of `RateLimitModule.forRootAsync()`. */
export type RateLimitModuleAsyncOptions = typeof built.ASYNC_OPTIONS_TYPE;
