/** Every option default of `createLimiter`, the adapters and the Nest module, in one place. */
import type { HeaderFormat } from '../http/headers.js';

/**
 * The default of each option that has one, by option name (nested options by their path,
 * `breaker.failureThreshold` as `failureThreshold`). The option schema (`OPTION_SCHEMA`)
 * reads these; code that needs a default imports it from here. Policy defaults
 * (`algorithm`, `failMode`, `cost`) are `POLICY_DEFAULTS`.
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
  /** Rate-limit header format. */
  headers: 'draft-10' as HeaderFormat,
  /** Show shadow policies in the headers. */
  shadowHeaders: false,
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
});
