/** What `@sluice/core`, `@sluice/core/adapter` and `@sluice/core/node` export (source entries), checked by name. */
import { describe, expect, it } from 'vitest';
import * as adapter from '../../packages/core/src/adapter.js';
import * as core from '../../packages/core/src/index.js';
import * as node from '../../packages/core/src/node/index.js';

describe('public API', () => {
  it('@sluice/core exports the policy model, the limiter, the stores, the error checks and the HTTP verdict', () => {
    for (const name of [
      'definePolicy',
      'PolicyError',
      'isPolicyError',
      'isRateLimitOptionsError',
      'isCidrError',
      'isStoreTimeoutError',
      'isRestRedisError',
      'SLIDING_LOG_MAX_LIMIT',
      'createLimiter',
      'MemoryStore',
      'RedisStore',
      'createRestEvalClient',
      'defineTransport',
      'ioredisTransport',
      'ioredisClusterTransport',
      'nodeRedisTransport',
      'restTransport',
      'toHttpVerdict',
      'createMetrics',
      'createServiceStore',
    ]) {
      expect(core, name).toHaveProperty(name);
    }
  });

  it('@sluice/core/adapter exports the option schema, the request path and the header helpers', () => {
    for (const name of [
      'StoreTimeoutError',
      'encodeKeyComponent',
      'rateLimitHeaders',
      'routeKey',
      'normalizePath',
      'createRateLimitHandler',
      'OPTION_SCHEMA',
      'OPTION_DEFAULTS',
      'optionNames',
    ]) {
      expect(adapter, name).toHaveProperty(name);
      expect(core, name).not.toHaveProperty(name);
    }
  });

  it('internals are exported by neither entry', () => {
    for (const name of [
      'parseDuration',
      'parseRate',
      'POLICY_DEFAULTS',
      'LIMITER_DEFAULTS',
      'DECIDE_SCRIPT',
      'RESET_SCRIPT',
      'ScriptCall',
      'REDIS_STORE_DEFAULTS',
      'encodeScriptKeys',
      'encodeScriptArgs',
      'decodeScriptReply',
      'buildKey',
      'retryAfterSeconds',
      'resolveRateLimitOptions',
      'ServiceStore',
    ]) {
      expect(core, name).not.toHaveProperty(name);
      expect(adapter, name).not.toHaveProperty(name);
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
