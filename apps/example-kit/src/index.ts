/**
 * What the five example apps share: the contract's policy table, the environment (port, store,
 * prefix, store deadline, deny list), and the start-up warm-up. Each app adds only its framework's routes.
 */
export { type AppEnv, appEnv, type ExampleAppOptions } from './app-env.js';
export { denyListFromEnv } from './deny-list.js';
export { API_KEY_HEADER, apiKeyIdentity } from './identity.js';
export { type ExampleLimiter, exampleLimiter } from './limiter.js';
export { CONCURRENT_MAX_MS, concurrentReply, parseHoldMs } from './overload.js';
export { POLICIES, PRO_KEY_PREFIX, ROUTE_LIMITS, tieredPolicies } from './policies.js';
export { GENERATE_MAX_UNITS, generateReply, generateUnits, loginReply, parseUsed } from './settle.js';
export { type StoreChoice, storeFromEnv } from './store.js';
export { timeoutMsFromEnv } from './timeout.js';
export { warmUp } from './warm-up.js';
