/**
 * Every default of Sluice in one object: the options of `createLimiter()`, the adapters and
 * the Nest module, a policy's fields, the in-process tables and the stores.
 */
import type { Algorithm, FailMode } from '../types.js';

/**
 * The default of each option or field that has one, by name (nested options by their path,
 * `breaker.failureThreshold` as `failureThreshold`; a policy's own fields as `policy...`). The
 * option schema (`OPTION_SCHEMA`) reads these, and so does every other reader of a default:
 * `POLICY_DEFAULTS`, `IN_PROCESS_DEFAULTS`, `LIMITER_DEFAULTS` and `REDIS_STORE_DEFAULTS` are
 * views of this object.
 */
export const OPTION_DEFAULTS = Object.freeze({
  /** Key prefix of a limiter. */
  prefix: 'sluice',
  /** Deadline of every store call, in milliseconds. */
  timeoutMs: 100,
  /** Consecutive store failures that open the breaker. */
  failureThreshold: 5,
  /** How long an open breaker stops calling the store, in milliseconds. */
  cooldownMs: 1000,
  /** Key sets the deny cache remembers. */
  denyCacheMaxKeys: 10_000,
  /** Longest time the deny cache remembers a denial, in milliseconds. */
  denyCacheMaxAgeMs: 1000,
  /** Keys of the in-process limiter behind `failMode: 'local'`. */
  localFallbackMaxKeys: 100_000,
  /** How long an idempotent check's decision is remembered, in milliseconds. */
  idempotencyTtlMs: 60_000,
  /** Checks of one limiter waiting for their turn at once (`maxWaitMs`); past it a check is answered at once. */
  maxWaiting: 1000,
  /** Rate-limit header format. */
  headers: 'draft-10' as 'draft-10' | 'draft-7' | 'draft-6' | 'legacy' | false,
  /** Show shadow policies in the headers. */
  shadowHeaders: false,
  /** Status of a request a concurrency policy turned away. */
  concurrencyStatus: 429 as 429 | 503,
  /** Force shadow mode on every policy used. */
  shadow: false,
  /** Prefix length grouping IPv6 clients in the default identity. */
  ipv6Subnet: 56 as number | false,
  /** Scope of a policy a Nest `@RateLimit({ limit, window })` defines: one budget per route. */
  routeScope: 'route' as 'identity' | 'route',
  /** Register the Nest module globally. */
  isGlobal: true,
  /** Settle failed requests (status >= 400, or the connection closed) to 0 units. */
  skipFailedRequests: false,
  /** Settle successful requests (status < 400) to 0 units. */
  skipSuccessfulRequests: false,
  /** The Fastify hook that limits requests. */
  fastifyHook: 'onRequest' as 'onRequest' | 'preHandler',
  /** Fastify: limit every route of the scope, not only those with `config.rateLimit`. */
  fastifyGlobal: true,
  /** A policy's algorithm (and the shorthand's). */
  algorithm: 'token-bucket' as Algorithm,
  /** A policy's fail mode (and the `failMode` option's). */
  failMode: 'closed' as FailMode,
  /** A policy's cost per request, in units. */
  policyCost: 1,
  /** Whether a policy is a shadow policy. */
  policyShadow: false,
  /** A concurrency policy's slot lease (`leaseMs`): how long a slot lives without renewal, in milliseconds. */
  concurrencyLeaseMs: 30_000,
  /** A policy's scope: one budget per identity. */
  policyScope: 'identity' as 'identity' | 'route',
  /** Keys with a lease held at once; dropping one drops its unspent units (under-use, never over). */
  leaseMaxKeys: 100_000,
  /** Keys with a local-stage bucket at once; dropping one forgets its local usage. */
  localStageMaxKeys: 100_000,
  /** Keys a `MemoryStore` holds (the least recently used goes first past it). */
  memoryStoreMaxKeys: 1_000_000,
  /** Most script calls a `RedisStore` sends in one batch. */
  redisMaxBatch: 128,
  /** Longest a `RedisStore` call waits for its batch to fill, in milliseconds. */
  redisMaxBatchWaitMs: 2,
});

/** Which header set to send: `'draft-10'` (default), `'draft-7'`, `'draft-6'`, `'legacy'`, or none. */
export type HeaderFormat = typeof OPTION_DEFAULTS.headers;

/** Every accepted `HeaderFormat`, in the order error messages list them. */
export const HEADER_FORMATS: readonly HeaderFormat[] = ['draft-10', 'draft-7', 'draft-6', 'legacy', false];
