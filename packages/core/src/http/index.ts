/** The framework-neutral HTTP layer: headers, problem bodies, verdicts, routes, client IPs, metrics, adapter options. */

export {
  CidrError,
  type CidrRange,
  createIpList,
  formatCidr,
  type IpList,
  NAMED_RANGES,
  parseCidr,
} from '../options/cidr.js';
export { HEADER_FORMATS, type HeaderFormat } from '../options/defaults.js';
export {
  createDenyList,
  type DenyList,
  type DenyListEntries,
  type DenyListInput,
  isDenyList,
  toDenyList,
} from '../options/deny-list.js';
export { formatIp, type IpAddress, maskIp, normalizeIp, parseIp } from '../options/ip-address.js';
export {
  checkOptionNames,
  closestName,
  FOREIGN_OPTIONS,
  unknownOptionHint,
} from '../options/option-names.js';
export { RateLimitOptionsError } from '../options/options-error.js';
export { storeProblem } from '../options/store-check.js';
export {
  isLogger,
  type LogEntry,
  type PermissiveProxyTrust,
  type Reporter,
  report,
  resetWarnings,
  type SluiceLogger,
  WARNING_CODES,
  warnIfPermissiveTrustProxy,
  warnOnce,
  warnRoutesNotLimited,
} from '../warn.js';
export { abortSignalOf } from './abort-signal.js';
export { type CompileTarget, chooseLimit, ownFailMode } from './choose-policies.js';
export { type IpIdentityOptions, ipIdentity } from './client-ip.js';
export { DecisionFanout } from './decision-fanout.js';
export { FORBIDDEN } from './forbidden.js';
export {
  type RateLimitHeaderOptions,
  rateLimitHeaders,
  visibleResults,
  windowSeconds,
} from './headers.js';
export {
  createLimitRequest,
  previousCheck,
  type RequestFacts,
  type RequestLimitResult,
  shadowDecision,
} from './limit-request.js';
export {
  createMetrics,
  DEFAULT_DURATION_BUCKETS_SECONDS,
  type DecisionEmitter,
  escapeHelp,
  escapeLabelValue,
  METRIC_OUTCOMES,
  METRICS_OPTION_NAMES,
  type MetricsOptions,
  PROMETHEUS_CONTENT_TYPE,
  type SluiceMetrics,
} from './metrics.js';
export {
  type CountingSource,
  type HistogramSnapshot,
  type MetricFamily,
  type MetricSample,
  renderFamilies,
} from './metrics-families.js';
export {
  type PromClientRegistration,
  type PromClientRegistry,
  registerPromClient,
} from './metrics-prom-client.js';
export { BuiltOnce, type NodeResponse, setResponseHeader, unsentNodeResponse } from './node-response.js';
export {
  createRateLimitHandler,
  type RateLimitHandler,
  type RateLimitHandlerSettings,
  type ResolvedRateLimitOptions,
  resolveRateLimitOptions,
} from './options.js';
export {
  CompiledCache,
  MAX_COMPILED_CHOICES,
  type PolicyChoice,
  PolicyChoiceFailure,
  type PolicyChooser,
  unchosenFailMode,
} from './policy-choice.js';
export {
  forbiddenProblem,
  PROBLEM_CONTENT_TYPE,
  type ProblemBody,
  problemJson,
  QUOTA_EXCEEDED_TITLE,
  QUOTA_EXCEEDED_TYPE,
  quotaExceededProblem,
  unavailableProblem,
} from './problem.js';
export {
  type NodeResponseEvents,
  type RequestSettle,
  settledAsGone,
  settleOnResponseEnd,
  settleWhenBodyEnds,
  slotLeaseOf,
} from './request-end.js';
export { UNKNOWN_CLIENT_IDENTITY } from './request-identity.js';
export { denyingResults, longestWaitPolicy, retryAfterSeconds } from './retry-after.js';
export { isIdSegment, MAX_ROUTE_SEGMENTS, normalizePath, routeKey } from './route.js';
export { type ResponseFacts, type SettleOptions, settlerFor, settles } from './settle-request.js';
export {
  SF_INTEGER_MAX,
  type SfStringItem,
  serializeSfInteger,
  serializeSfList,
  serializeSfString,
} from './structured-fields.js';
export { type HttpVerdict, type HttpVerdictOptions, toHttpVerdict } from './verdict.js';
