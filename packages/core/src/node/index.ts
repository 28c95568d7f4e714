/** `@sluice/core/node`: Node-only helpers (ioredis). */
export { type CreateRedisStoreOptions, createRedisStore, type RedisTarget } from './ioredis.js';
