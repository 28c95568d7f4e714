/**
 * What the four example apps share: the contract's policy table, the store and the store
 * deadline chosen by the environment, and the start-up warm-up. Each app adds only its framework's routes.
 */
export { denyListFromEnv } from './deny-list.js';
export { API_KEY_HEADER, apiKeyIdentity } from './identity.js';
export { POLICIES, PRO_KEY_PREFIX, ROUTE_LIMITS, tieredPolicies } from './policies.js';
export { GENERATE_MAX_UNITS, generateReply, generateUnits, loginReply, parseUsed } from './settle.js';
export { type StoreChoice, storeFromEnv } from './store.js';
export { timeoutMsFromEnv } from './timeout.js';
export { warmUp } from './warm-up.js';
