/** The option schema: names per surface, defaults in one place, checks with the messages users see. */
import { describe, expect, expectTypeOf, it } from 'vitest';
import { createRateLimitHandler } from '../http/options.js';
import { toHttpVerdict } from '../http/verdict.js';
import { createLimiter } from '../limiter/index.js';
import { POLICY_DEFAULTS } from '../policy/index.js';
import {
  ADAPTER_OPTION_NAMES,
  checkOption,
  HTTP_OPTIONS,
  LIMITER_OPTION_NAMES,
  type LimiterOptions,
  OPTION_DEFAULTS,
  OPTION_SCHEMA,
  optionNames,
  type RateLimitOptions,
} from './index.js';

const error = (option: string, value: unknown, requirement: string) =>
  new Error(`"${option}" ${requirement}, got ${String(value)}`);

describe('option schema', () => {
  it('lists each surface its options, in README order', () => {
    expect(optionNames('express')).toEqual([...ADAPTER_OPTION_NAMES, 'onLimited']);
    expect(optionNames('koa')).toEqual([...ADAPTER_OPTION_NAMES, 'onLimited']);
    expect([...optionNames('hono')].sort()).toEqual(
      [...ADAPTER_OPTION_NAMES, 'onLimited', 'identityHeader', 'clientIp'].sort(),
    );
    expect(LIMITER_OPTION_NAMES).toEqual([
      'policies',
      'store',
      'prefix',
      'timeoutMs',
      'breaker',
      'denyCache',
      'localFallback',
      'idempotency',
      'maxWaiting',
      'clock',
      'onDecision',
    ]);
    expect([...optionNames('nestjs-decorator')].sort()).toEqual(
      [
        'policies',
        'cost',
        'shadow',
        'limit',
        'window',
        'rate',
        'burst',
        'algorithm',
        'failMode',
        'scope',
        'name',
        'denyList',
        'settle',
        'skipFailedRequests',
        'skipSuccessfulRequests',
        'requestWasSuccessful',
      ].sort(),
    );
    expect(optionNames('nestjs-module')).toContain('defaultPolicies');
    expect(optionNames('nestjs-module')).toContain('timeoutMs');
  });

  it('takes its defaults from OPTION_DEFAULTS and POLICY_DEFAULTS only', () => {
    expect(HTTP_OPTIONS.headers.default).toBe(OPTION_DEFAULTS.headers);
    expect(HTTP_OPTIONS.ipv6Subnet.default).toBe(OPTION_DEFAULTS.ipv6Subnet);
    expect(HTTP_OPTIONS.prefix.default).toBe(OPTION_DEFAULTS.prefix);
    expect(HTTP_OPTIONS.algorithm.default).toBe(POLICY_DEFAULTS.algorithm);
    expect(HTTP_OPTIONS.failMode.default).toBe(POLICY_DEFAULTS.failMode);
    expect(OPTION_SCHEMA.timeoutMs?.default).toBe(OPTION_DEFAULTS.timeoutMs);
  });

  it('applies those defaults where the options are resolved and used', () => {
    const handler = createRateLimitHandler({ limit: 1, window: '1m' }, 'test');
    expect(handler.headerFormat).toBe(OPTION_DEFAULTS.headers);
    expect(handler.ipv6Subnet).toBe(OPTION_DEFAULTS.ipv6Subnet);
    expect(handler.shadow).toBe(OPTION_DEFAULTS.shadow);
    expect(handler.shadowHeaders).toBe(OPTION_DEFAULTS.shadowHeaders);
    expect(handler.limiter?.prefix).toBe(OPTION_DEFAULTS.prefix);
    expect(createLimiter({ policies: [{ name: 'a', limit: 1, window: 1000 }] }).prefix).toBe(
      OPTION_DEFAULTS.prefix,
    );
    const decision = {
      allowed: true,
      outcome: 'allowed',
      policy: 'a',
      limit: 5,
      remaining: 4,
      resetMs: 1000,
      retryAfterMs: 0,
      shadowed: false,
      results: [],
    } as never;
    expect(toHttpVerdict(decision)).toEqual(toHttpVerdict(decision, { headers: OPTION_DEFAULTS.headers }));
  });

  it('checks a set value with the message of the option, and returns the default for an unset one', () => {
    expect(checkOption(HTTP_OPTIONS.headers, 'headers', undefined, error)).toBe('draft-10');
    expect(() => checkOption(HTTP_OPTIONS.ipv6Subnet, 'ipv6Subnet', 0, error)).toThrow(
      '"ipv6Subnet" must be an integer from 1 to 128 or false, got 0',
    );
    expect(() => checkOption(HTTP_OPTIONS.cost, 'cost', { a: 0 }, error)).toThrow(
      '"cost.a" must be a positive, finite number, got 0',
    );
    expect(checkOption(HTTP_OPTIONS.ipv6Subnet, 'ipv6Subnet', false, error)).toBe(false);
  });

  it('derives the option types, binding the request type', () => {
    type Req = { id: number };
    expectTypeOf<RateLimitOptions<Req>['identity']>().toEqualTypeOf<
      | ((
          req: Req,
        ) =>
          | import('../types.js').IdentityInput
          | undefined
          | Promise<import('../types.js').IdentityInput | undefined>)
      | undefined
    >();
    expectTypeOf<RateLimitOptions<Req>['limit']>().toEqualTypeOf<
      number | ((req: Req) => number | Promise<number>) | undefined
    >();
    expectTypeOf<LimiterOptions['clock']>().toEqualTypeOf<(() => number) | undefined>();
  });
});
