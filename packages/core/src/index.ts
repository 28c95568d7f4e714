/**
 * `@sluice/core`: policies, algorithms, stores, the limiter and framework-neutral HTTP helpers.
 * Web-standard only: nothing reachable from here imports `node:` modules, Buffer or process.
 * Node-only helpers (ioredis) live in `@sluice/core/node`.
 */

export {
  isCidrError,
  isPolicyError,
  isRateLimitOptionsError,
  isRestRedisError,
  isStoreTimeoutError,
} from './error-brands.js';
export * from './http/index.js';
export {
  buildKey,
  encodeKeyComponent,
  IDENTITY_KINDS,
  identityTag,
  isIdentityInput,
  policyKey,
  requestKey,
} from './keys/index.js';
export {
  type BreakerState,
  createLimiter,
  LIMITER_DEFAULTS,
  type Limiter,
  type LimiterCounters,
  type LimiterOptions,
  metricOutcome,
  type RememberedDenialSource,
  type ScriptStats,
  type SettleAnswer,
  type SettleUnits,
  type StoreErrorCause,
  StoreTimeoutError,
} from './limiter/index.js';
export {
  ADAPTER_OPTION_NAMES,
  type BindRequest,
  type CostValue,
  checkFrameworkOptions,
  checkModuleOptions,
  checkOption,
  checkOwnPolicyStore,
  checkSuccessDecided,
  FRAMEWORK_OPTIONS,
  HTTP_OPTIONS,
  LIMITER_OPTION_NAMES,
  LIMITER_OPTIONS,
  limiterOptionsOf,
  MIDDLEWARE,
  type ModuleOptions,
  NEST_MODULE_OPTION_NAMES,
  OPTION_DEFAULTS,
  OPTION_SCHEMA,
  type OptionSpec,
  type OptionSurface,
  type OptionsOf,
  optionNames,
  type PolicyNamesOf,
  policyNameList,
  type RateLimitOptions,
  type RequestOf,
  type RouteLimit,
  type RouteOptions,
  routeLimit,
  routePolicyNames,
  routeRequestOptions,
  SETTLE_OPTION_NAMES,
} from './options/index.js';
export { preparePolicy } from './policy/compile-policies.js';
export {
  ALGORITHM_NAMES,
  compilePolicies,
  definePolicies,
  definePolicy,
  FAIL_MODES,
  isCompiledPolicy,
  MAX_DURATION_MS,
  type ParsedRate,
  POLICY_DEFAULTS,
  PolicyError,
  type PolicySetOptions,
  parseDuration,
  parseRate,
  SLIDING_LOG_MAX_LIMIT,
} from './policy/index.js';
export {
  fromNodeRedis,
  type NodeRedisEvalClient,
  type NodeRedisEvalOptions,
  type NodeRedisLike,
} from './redis/node-redis.js';
export {
  createRestEvalClient,
  type FetchLike,
  fromUpstashRedis,
  type RestEvalClientOptions,
  RestRedisError,
  type RestResponseEncoding,
  type UpstashRedisLike,
} from './redis/rest-client.js';
export {
  DECIDE_SCRIPT,
  decodeScriptReply,
  encodeScriptArgs,
  encodeScriptKeys,
  RESET_SCRIPT,
  ScriptCall,
} from './redis/script.js';
export { SETTLE_SCRIPT } from './redis/settle-script.js';
export {
  defineTransport,
  type ScriptSource,
  type ScriptTransport,
  type TransportCommands,
} from './redis/transport.js';
export { type IoredisLike, ioredisTransport } from './redis/transports/ioredis.js';
export { ioredisClusterTransport } from './redis/transports/ioredis-cluster.js';
export { nodeRedisTransport } from './redis/transports/node-redis.js';
export { type RestTransportOptions, restTransport } from './redis/transports/rest.js';
export {
  MemoryStore,
  type MemoryStoreCheckOptions,
  type MemoryStoreOptions,
} from './stores/memory-store.js';
export {
  isNoScriptError,
  REDIS_STORE_DEFAULTS,
  RedisStore,
  type RedisStoreCheckOptions,
  type RedisStoreOptions,
} from './stores/redis-store.js';
export {
  createServiceStore,
  protoDurationMs,
  type ServiceDescriptorEntry,
  ServiceStore,
  type ServiceStoreOptions,
} from './stores/service-store.js';
export * from './types.js';
