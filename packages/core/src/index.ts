/**
 * `@sluice/core`: what an application uses. Policies, the limiter, the stores and the clients they
 * wrap, metrics, deny lists and client IPs, the HTTP verdict of a decision, the error checks and the
 * vocabulary types. Web-standard only: nothing reachable from here imports `node:` modules, Buffer or
 * process. Node-only helpers (ioredis) live in `@sluice/core/node`; what an adapter author needs
 * (option schema, request path, header and problem helpers) in `@sluice/core/adapter`.
 * A test (api-surface.test.ts) holds this entry to at most 40 runtime names and 90 names in all.
 */

export { SLIDING_LOG_MAX_LIMIT } from './algorithms/sliding-log.js';
export {
  isCidrError,
  isPolicyError,
  isRateLimitOptionsError,
  isRestRedisError,
  isStoreTimeoutError,
} from './error-guards.js';
export { ipIdentity } from './http/client-ip.js';
export {
  createMetrics,
  DEFAULT_DURATION_BUCKETS_SECONDS,
  type MetricsOptions,
  PROMETHEUS_CONTENT_TYPE,
  type SluiceMetrics,
} from './http/metrics.js';
export { type PromClientRegistry, registerPromClient } from './http/metrics-prom-client.js';
export type { ProblemBody } from './http/problem.js';
export type { ResponseFacts } from './http/settle-request.js';
export { type HttpVerdict, toHttpVerdict } from './http/verdict.js';
export {
  createLimiter,
  type Limiter,
  type LimiterOptions,
  type SettleAnswer,
  type SettleUnits,
} from './limiter/index.js';
export { CidrError, createIpList, type IpList, parseCidr } from './options/cidr.js';
export type { HeaderFormat } from './options/defaults.js';
export {
  createDenyList,
  type DenyList,
  type DenyListEntries,
  type DenyListInput,
} from './options/deny-list.js';
export type { RateLimitOptions } from './options/index.js';
export { parseIp } from './options/ip-address.js';
export { definePolicies, definePolicy } from './policy/define-policy.js';
export { PolicyError } from './policy/errors.js';
export { fromNodeRedis } from './redis/node-redis.js';
export {
  createRestEvalClient,
  fromUpstashRedis,
  type RestEvalClientOptions,
} from './redis/rest-client.js';
export { defineTransport, type ScriptTransport, type TransportCommands } from './redis/transport.js';
export { ioredisTransport } from './redis/transports/ioredis.js';
export { ioredisClusterTransport } from './redis/transports/ioredis-cluster.js';
export { nodeRedisTransport } from './redis/transports/node-redis.js';
export { type RestTransportOptions, restTransport } from './redis/transports/rest.js';
export { MemoryStore, type MemoryStoreOptions } from './stores/memory-store.js';
export { RedisStore, type RedisStoreOptions } from './stores/redis-store.js';
export { createServiceStore, type ServiceStoreOptions } from './stores/service-store.js';
export type {
  Algorithm,
  BanInput,
  Clock,
  CompiledPolicy,
  CostInput,
  Decision,
  DecisionEvent,
  DecisionSource,
  Descriptor,
  EvalClient,
  FailMode,
  Identity,
  IdentityInput,
  IdentityKind,
  LeaseInput,
  LocalStageInput,
  MetricOutcome,
  Outcome,
  PolicyInput,
  PolicyResult,
  RateInput,
  Store,
  StoreCheckOptions,
  StoreEntry,
  StoreMode,
  StoreSettleEntry,
  StoreVerdict,
} from './types.js';
export { type LogEntry, type SluiceLogger, WARNING_CODES } from './warn.js';
