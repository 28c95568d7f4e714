/** Settings from the environment: envoyproxy/ratelimit's names and defaults; bad values name the variable. */
import { describe, expect, it } from 'vitest';
import { readSettings } from './settings.js';

describe('readSettings', () => {
  it("has envoyproxy/ratelimit's defaults", () => {
    const s = readSettings({});
    expect(s).toMatchObject({
      grpcPort: 8081,
      httpPort: 8080,
      host: '0.0.0.0',
      configDir: '/srv/runtime_data/current/config',
      watchRoot: true,
      redisUrl: undefined,
      redisType: 'single',
      shadowMode: false,
      responseHeaders: 'off',
      headerNames: { limit: 'RateLimit-Limit', remaining: 'RateLimit-Remaining', reset: 'RateLimit-Reset' },
      cacheKeyPrefix: '',
      nearLimitRatio: 0.8,
      timeoutMs: 100,
    });
  });

  it('reads the runtime folders, REDIS_URL as host:port or redis:// URLs, and the header settings', () => {
    const s = readSettings({
      RUNTIME_ROOT: '/data',
      RUNTIME_SUBDIRECTORY: 'ratelimit',
      REDIS_URL: '10.0.0.1:7000,redis://10.0.0.2:7001',
      REDIS_TYPE: 'CLUSTER',
      LIMIT_RESPONSE_HEADERS_ENABLED: 'true',
      SHADOW_MODE: '1',
    });
    expect(s.configDir).toBe('/data/ratelimit/config');
    expect(s.redisUrl).toBe('redis://10.0.0.1:7000,redis://10.0.0.2:7001');
    expect(s.redisType).toBe('cluster');
    expect(s.responseHeaders).toBe('reference');
    expect(s.shadowMode).toBe(true);
    expect(readSettings({ SLUICE_RESPONSE_HEADERS: 'draft-10' }).responseHeaders).toBe('draft-10');
  });

  it.each([
    [{ GRPC_PORT: '80a' }, /GRPC_PORT must be an integer from 0 to 65535, got "80a"/],
    [{ PORT: '70000' }, /PORT must be an integer from 0 to 65535, got "70000"/],
    [{ REDIS_TYPE: 'sentinel' }, /REDIS_TYPE must be single or cluster, got "sentinel"/],
    [{ REDIS_URL: '/var/run/redis.sock' }, /REDIS_URL must be host:port or a redis:\/\/ URL/],
    [{ SHADOW_MODE: 'yes' }, /SHADOW_MODE must be true or false, got "yes"/],
    [{ NEAR_LIMIT_RATIO: '2' }, /NEAR_LIMIT_RATIO must be in \(0, 1\], got "2"/],
    [
      { SLUICE_RESPONSE_HEADERS: 'draft-7' },
      /SLUICE_RESPONSE_HEADERS must be draft-10 or reference, got "draft-7"/,
    ],
    [{ SLUICE_TIMEOUT_MS: '0' }, /SLUICE_TIMEOUT_MS must be an integer from 1 to 60000, got "0"/],
  ])('%o is refused, naming the variable and value', (env, message) => {
    expect(() => readSettings(env)).toThrow(message);
  });
});
