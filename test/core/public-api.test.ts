/** What `@sluice/core` and `@sluice/core/node` export (source entries), checked by name. */
import { describe, expect, it } from 'vitest';
import * as core from '../../packages/core/src/index.js';
import * as node from '../../packages/core/src/node/index.js';

describe('public API', () => {
  it('@sluice/core exports the policy model, the limiter, the stores, the script and the HTTP layer', () => {
    for (const name of [
      'definePolicy',
      'parseDuration',
      'parseRate',
      'PolicyError',
      'isPolicyError',
      'isRateLimitOptionsError',
      'isCidrError',
      'isStoreTimeoutError',
      'isRestRedisError',
      'POLICY_DEFAULTS',
      'SLIDING_LOG_MAX_LIMIT',
      'createLimiter',
      'LIMITER_DEFAULTS',
      'StoreTimeoutError',
      'MemoryStore',
      'RedisStore',
      'DECIDE_SCRIPT',
      'RESET_SCRIPT',
      'ScriptCall',
      'REDIS_STORE_DEFAULTS',
      'encodeScriptKeys',
      'encodeScriptArgs',
      'decodeScriptReply',
      'buildKey',
      'encodeKeyComponent',
      'createRestEvalClient',
      'defineTransport',
      'ioredisTransport',
      'ioredisClusterTransport',
      'nodeRedisTransport',
      'restTransport',
      'toHttpVerdict',
      'rateLimitHeaders',
      'retryAfterSeconds',
      'routeKey',
      'normalizePath',
      'resolveRateLimitOptions',
      'createRateLimitHandler',
      'OPTION_SCHEMA',
      'OPTION_DEFAULTS',
      'optionNames',
      'createMetrics',
      'createServiceStore',
      'ServiceStore',
    ]) {
      expect(core, name).toHaveProperty(name);
    }
  });

  it('@sluice/core/node exports createRedisStore', () => {
    expect(typeof node.createRedisStore).toBe('function');
  });

  it('a limiter works end to end from the entry point alone', async () => {
    const limiter = core.createLimiter({
      policies: [core.definePolicy({ name: 'one', limit: 1, window: '1m' })],
    });
    expect((await limiter.check({ identity: 'a' })).allowed).toBe(true);
    const denied = await limiter.check({ identity: 'a' });
    expect(core.toHttpVerdict(denied).status).toBe(429);
  });
});
