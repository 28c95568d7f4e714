/**
 * The core entry points the Cluster and failure suites use, imported from source in one place
 * (so the suites run without a build).
 */
export { createMetrics, toHttpVerdict } from '../../packages/core/src/http/index.js';
export { banKeyOf, identityTag } from '../../packages/core/src/keys/index.js';
export { createLimiter } from '../../packages/core/src/limiter/index.js';
export { createRedisStore } from '../../packages/core/src/node/index.js';
export { RedisStore } from '../../packages/core/src/stores/redis-store.js';
export type {
  Algorithm,
  Decision,
  DecisionEvent,
  EvalClient,
  FailMode,
  PolicyInput,
} from '../../packages/core/src/types.js';
