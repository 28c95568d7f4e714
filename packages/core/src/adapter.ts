/**
 * `@sluice/core/adapter`: what an adapter author needs beyond the main entry, the parts that
 * `@sluice/express`, `@sluice/koa`, `@sluice/hono`, `@sluice/nestjs`, `@sluice/fastify` and
 * `@sluice/server` are built from. An application imports `@sluice/core`; this subpath is for
 * code that turns a framework's request into a check and a decision into its response.
 *
 * - the option schema: every option once, the name lists and the checks an adapter runs on its own
 *   options (`OPTION_SCHEMA`, `optionNames`, `checkFrameworkOptions`, ...);
 * - the request path: `createRateLimitHandler(options, adapter)` and what it is made of;
 * - the answer: headers, problem bodies, route keys;
 * - settling after the response, coded warnings, the error classes an adapter throws;
 * - what `@sluice/server` reads: key encoding, metric text escaping, durations of the service protocol,
 *   which entries a decision charged (`chargedOf`), and regional quota assignment (`RedisQuotaTable`
 *   over lua/quota.lua, `MemoryQuotaTable`).
 *
 * Web-standard only, like the main entry: no `node:` module, Buffer or process (the Hono adapter
 * runs on edge runtimes through it). Same package, same classes: a `MemoryStore` from the main
 * entry and a handler from here work together, in ESM and CommonJS alike.
 */

export { holdsSlots } from './algorithms/concurrency.js';
export { ALGORITHM_NAMES } from './algorithms/registry.js';
export {
  abortSignalOf,
  BuiltOnce,
  chooseLimit,
  createLimitRequest,
  createRateLimitHandler,
  DecisionFanout,
  escapeHelp,
  escapeLabelValue,
  type HttpVerdictOptions,
  METRICS_OPTION_NAMES,
  type MetricFamily,
  type NodeResponseEvents,
  normalizePath,
  ownFailMode,
  PROBLEM_CONTENT_TYPE,
  problemJson,
  quotaExceededProblem,
  type RateLimitHandler,
  type RateLimitHandlerSettings,
  type RequestFacts,
  type RequestLimitResult,
  type RequestSettle,
  rateLimitHeaders,
  renderFamilies,
  routeKey,
  setResponseHeader,
  settledAsGone,
  settleOnResponseEnd,
  settleWhenBodyEnds,
  toDenyList,
  unsentNodeResponse,
} from './http/index.js';
export { encodeKeyComponent, identityTag } from './keys/index.js';
export { chargedOf } from './limiter/charged.js';
export { StoreTimeoutError } from './limiter/index.js';
export type { CompiledQuota, QuotaInput, QuotaSource, QuotaSourceBucket, QuotaTake } from './model/quota.js';
export {
  ADAPTER_OPTION_NAMES,
  checkFrameworkOptions,
  checkModuleOptions,
  checkOption,
  checkOwnPolicyStore,
  checkSuccessDecided,
  FRAMEWORK_OPTIONS,
  HTTP_OPTIONS,
  LIMITER_OPTION_NAMES,
  limiterOptionsOf,
  type ModuleOptions,
  NEST_MODULE_OPTION_NAMES,
  OPTION_DEFAULTS,
  OPTION_SCHEMA,
  type OptionSpec,
  type OptionSurface,
  optionNames,
  type PolicyNamesOf,
  policyNameList,
  type RouteLimit,
  type RouteOptions,
  routeLimit,
  routePolicyNames,
  routeRequestOptions,
} from './options/index.js';
export { checkOptionNames } from './options/option-names.js';
export { RateLimitOptionsError } from './options/options-error.js';
export { compilePolicies, preparePolicy } from './policy/compile-policies.js';
export {
  checkQuotaReport,
  heldShares,
  leaveQuota,
  QUOTA_FLOOR_PERMILLE,
  type QuotaAnswer,
  type QuotaHolding,
  type QuotaReport,
  type QuotaTableState,
  quotaTarget,
  reportQuota,
} from './quota/allocate.js';
export {
  decodeQuotaReply,
  encodeQuotaArgs,
  MemoryQuotaTable,
  QUOTA_SCRIPT,
  type QuotaTable,
  RedisQuotaTable,
} from './quota/quota-table.js';
export { RestRedisError } from './redis/rest-client.js';
export { protoDurationMs } from './stores/service-store.js';
export {
  isLogger,
  type PermissiveProxyTrust,
  resetWarnings,
  warnIfPermissiveTrustProxy,
  warnRoutesNotLimited,
} from './warn.js';
