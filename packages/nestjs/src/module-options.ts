/** The options of `RateLimitModule.forRoot()` / `forRootAsync()`, and the module builder. */
import { ConfigurableModuleBuilder } from '@nestjs/common';
import {
  ADAPTER_OPTION_NAMES,
  type Algorithm,
  type FailMode,
  LIMITER_OPTION_NAMES,
  type Limiter,
  type LimiterOptions,
  type PolicyInput,
  type RateLimitOptions,
  type Store,
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
  /** Algorithm of the shorthand policy. Default `'token-bucket'`, as for every policy. */
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
  /**
   * Client IPs never limited: CIDR ranges, addresses, the names `loopback`, `linklocal`,
   * `uniquelocal`, or an `IpList`. Matched against `req.ip`.
   */
  allowList?: RateLimitOptions<RateLimitRequest>['allowList'];
}

/**
 * Every option name `forRoot()` takes, from core's two lists (adapter and limiter) plus
 * `defaultPolicies`: the start-up check and the type above are checked against each other.
 */
export const NEST_MODULE_OPTION_NAMES: readonly string[] = Object.freeze([
  ...new Set<string>([...ADAPTER_OPTION_NAMES, ...LIMITER_OPTION_NAMES, 'defaultPolicies']),
]);

type ModuleOptionName =
  | (typeof ADAPTER_OPTION_NAMES)[number]
  | (typeof LIMITER_OPTION_NAMES)[number]
  | 'defaultPolicies';
type Mismatch =
  | Exclude<keyof RateLimitModuleOptions, ModuleOptionName>
  | Exclude<ModuleOptionName, keyof RateLimitModuleOptions>;
const moduleNamesMatch: [Mismatch] extends [never] ? true : { mismatch: Mismatch } = true;
void moduleNamesMatch;

/** Limiter options that go to `createLimiter()` as they are (`prefix`, `timeoutMs`, `clock`...). */
const PASSED_TO_LIMITER = LIMITER_OPTION_NAMES.filter((name) => name !== 'policies' && name !== 'store');

/** The module options that go to `createLimiter()` as they are (`prefix`, `timeoutMs`, `clock`...). */
export function limiterOptionsOf(
  options: RateLimitModuleOptions,
): Omit<LimiterOptions, 'policies' | 'store'> {
  const picked: Record<string, unknown> = {};
  for (const name of PASSED_TO_LIMITER) {
    const value = (options as Record<string, unknown>)[name];
    if (value !== undefined) picked[name] = value;
  }
  return picked as Omit<LimiterOptions, 'policies' | 'store'>;
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
