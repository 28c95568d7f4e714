/**
 * The `logger` option: coded warnings and errors go to the app's logger as structured entries
 * (every occurrence, never an identity or a path), console once otherwise; a bad logger is an
 * error at construction that names the option.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLimiter } from '../limiter/index.js';
import {
  type LogEntry,
  report,
  resetWarnings,
  type SluiceLogger,
  WARNING_CODES,
  warnIfPermissiveTrustProxy,
} from '../warn.js';
import { createRateLimitHandler } from './options.js';

type Req = { plan?: string };
const facts = { method: 'GET', pattern: '/things/:id', path: '/things/secret-path-7', ip: undefined };

/** A logger that keeps what it is given. */
function recordingLogger(): SluiceLogger & { warns: LogEntry[]; errors: LogEntry[] } {
  const warns: LogEntry[] = [];
  const errors: LogEntry[] = [];
  return { warns, errors, warn: (e) => warns.push(e), error: (e) => errors.push(e) };
}

afterEach(() => {
  resetWarnings();
  vi.restoreAllMocks();
});

describe('logger option', () => {
  it('gets every request without a client IP as a structured warning; console gets nothing', async () => {
    const console = vi.spyOn(globalThis.console, 'warn').mockImplementation(() => {});
    const logger = recordingLogger();
    const handler = createRateLimitHandler<Req>({ limit: 10, window: '1m', logger }, 'test');
    await handler.limitRequest({}, facts);
    await handler.limitRequest({}, facts);
    expect(logger.warns).toEqual([
      expect.objectContaining({ code: WARNING_CODES.NO_CLIENT_IP, fields: { adapter: 'test' } }),
      expect.objectContaining({ code: WARNING_CODES.NO_CLIENT_IP }),
    ]);
    expect(logger.warns[0]?.message).toMatch(/no client IP and no identity/);
    expect(JSON.stringify(logger.warns)).not.toMatch(/secret-path-7|things/);
    expect(console).not.toHaveBeenCalled();
  });

  it('gets a failed policy choice as an error with the option and fail mode', async () => {
    const logger = recordingLogger();
    const limiter = createLimiter({ policies: [{ name: 'free', limit: 3, window: '1m' }] });
    const handler = createRateLimitHandler<Req>(
      {
        limiter,
        policies: () => {
          throw new Error('plan lookup for tenant-9 failed');
        },
        identity: () => 'tenant-9',
        logger,
      },
      'test',
    );
    const result = await handler.limitRequest({}, { ...facts, ip: '10.0.0.1' });
    expect(result?.decision.outcome).toBe('unavailable');
    expect(logger.errors).toEqual([
      {
        code: WARNING_CODES.POLICY_CHOICE_FAILED,
        message: expect.stringContaining('"policies" function threw (Error)'),
        fields: { adapter: 'test', option: 'policies', failMode: 'closed' },
      },
    ]);
    expect(JSON.stringify(logger.errors)).not.toContain('tenant-9');
  });

  it('gets the shadow-with-shared-limiter warning at construction', () => {
    const logger = recordingLogger();
    const limiter = createLimiter({ policies: [{ name: 'p', limit: 3, window: '1m' }] });
    createRateLimitHandler<Req>({ limiter, shadow: true, logger }, 'test');
    expect(logger.warns.map((e) => e.code)).toEqual([WARNING_CODES.SHADOW_WITH_SHARED_LIMITER]);
  });

  it('gets the trust proxy warning when the adapter passes it on', () => {
    const logger = recordingLogger();
    warnIfPermissiveTrustProxy(
      {},
      () => ({ setting: "'trust proxy' is true", ipSource: 'req.ip', fix: 'Set it to a number.' }),
      logger,
    );
    expect(logger.warns).toEqual([
      expect.objectContaining({
        code: WARNING_CODES.PERMISSIVE_TRUST_PROXY,
        fields: { setting: "'trust proxy' is true" },
      }),
    ]);
  });

  it('is rejected at construction when it has no warn function, naming the option', () => {
    expect(() =>
      createRateLimitHandler<Req>({ limit: 1, window: '1m', logger: {} as never }, 'test'),
    ).toThrow(/"logger" must be an object with warn\(entry\)/);
    expect(() =>
      createRateLimitHandler<Req>(
        { limit: 1, window: '1m', logger: { warn: () => {}, error: 1 } as never },
        'test',
      ),
    ).toThrow(/"logger"/);
  });
});

describe('report', () => {
  it('prints each code once with console.warn without a logger', () => {
    const console = vi.spyOn(globalThis.console, 'warn').mockImplementation(() => {});
    report(undefined, 'error', 'SLUICE_TEST', 'first');
    report(undefined, 'error', 'SLUICE_TEST', 'second');
    expect(console.mock.calls).toEqual([['[SLUICE_TEST] first']]);
  });

  it('hands errors to warn when the logger has no error, and survives a throwing logger', () => {
    const warns: LogEntry[] = [];
    report({ warn: (e) => warns.push(e) }, 'error', 'SLUICE_TEST', 'm', { n: 1 });
    expect(warns).toEqual([{ code: 'SLUICE_TEST', message: 'm', fields: { n: 1 } }]);
    expect(() =>
      report(
        {
          warn: () => {
            throw new Error('logger down');
          },
        },
        'warn',
        'SLUICE_TEST',
        'm',
      ),
    ).not.toThrow();
  });
});
