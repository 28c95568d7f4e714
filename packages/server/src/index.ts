/**
 * `@sluice/server`: Sluice as a rate limit service, a drop-in for envoyproxy/ratelimit. Envoy's
 * `ShouldRateLimit` and `StreamRateLimitQuotas` (regional quotas; `QuotaClient` is a Node data
 * plane of it) over gRPC, `POST /json`, `/healthcheck` and `/metrics` over HTTP, the
 * reference's YAML config, decided by Sluice's atomic multi-policy scripts. Run it with the
 * `sluice-server` bin, or start it in-process with `startServer(readSettings(env))`.
 */
export { loadConfigDir, watchConfig } from './config/load.js';
export { type DescriptorEntry, findRule, type RuleMatch, wildcardMatch } from './config/match.js';
export { type ConfigFile, parseConfig } from './config/parse.js';
export {
  ConfigError,
  type RateLimitConfig,
  type Rule,
  type RuleNode,
  UNIT_MS,
  type Unit,
} from './config/types.js';
export { requestFromJson, responseToJson } from './json.js';
export { counterKey } from './plan.js';
export { PROTO_DIR, PROTO_FILES, PROTO_OPTIONS, packageDefinition } from './protos.js';
export {
  QuotaBucket,
  QuotaClient,
  type QuotaClientOptions,
  type QuotaVerdict,
} from './quota/quota-client.js';
export {
  QUOTA_CLIENT_METADATA,
  QuotaService,
  type QuotaServiceOptions,
  QuotaStream,
} from './quota/quota-service.js';
export type { RlqsBucketAction, RlqsReports, RlqsResponse, RlqsStrategy } from './quota/rlqs-types.js';
export * from './rls-types.js';
export { type Log, type RunningServer, type StartServerOptions, startServer } from './server.js';
export { RateLimitService, type RateLimitServiceOptions } from './service.js';
export { type ResponseHeaders, readSettings, type ServerSettings } from './settings.js';
export { RULE_STATS, SERVICE_STATS, ServiceStats } from './stats.js';
