import { describe, expect, it } from 'vitest';
import type { PolicyInput } from '../types.js';
import { definePolicies, definePolicy, isCompiledPolicy } from './define-policy.js';
import { parseDuration, parseRate } from './duration.js';
import { PolicyError } from './errors.js';

describe('definePolicy: compilation', () => {
  it('applies the defaults', () => {
    const p = definePolicy({ name: 'basic', limit: 10, window: '10s' });
    expect(p).toEqual({
      name: 'basic',
      algorithm: 'token-bucket',
      limit: 10,
      windowMs: 10_000,
      intervalMs: 1000,
      cost: 1,
      failMode: 'closed',
      shadow: false,
      scope: 'identity',
    });
    expect(Object.isFrozen(p)).toBe(true);
  });

  it('token bucket: burst is the capacity, rate the refill', () => {
    const p = definePolicy({ name: 'burst', burst: 20, rate: '1/s' });
    expect([p.limit, p.intervalMs, p.windowMs]).toEqual([20, 1000, 20_000]);
  });

  it('token bucket: limit per window without burst', () => {
    const p = definePolicy({ name: 'api', limit: 100, window: '1m' });
    expect([p.limit, p.intervalMs, p.windowMs]).toEqual([100, 600, 60_000]);
  });

  it('token bucket: burst below the refill rate', () => {
    const p = definePolicy({ name: 'api', limit: 100, window: '1m', burst: 20 });
    expect([p.limit, p.intervalMs, p.windowMs]).toEqual([20, 600, 12_000]);
  });

  it('gcra uses the same shape as the token bucket', () => {
    const p = definePolicy({ name: 'g', algorithm: 'gcra', rate: '5/10s', burst: 3 });
    expect([p.limit, p.intervalMs, p.windowMs]).toEqual([3, 2000, 6000]);
  });

  it.each([
    ['sliding-window', 'sliding-window'],
    ['fixed-window', 'fixed-window'],
    ['sliding-log', 'sliding-log'],
  ] as const)('%s: limit per window', (_label, algorithm) => {
    const p = definePolicy({ name: 'w', algorithm, limit: 3, window: 60_000 });
    expect([p.limit, p.windowMs, p.intervalMs]).toEqual([3, 60_000, 20_000]);
    // 500 per window: the sliding log's cap (SLIDING_LOG_MAX_LIMIT), accepted.
    const q = definePolicy({ name: 'w', algorithm, rate: '500/1m' });
    expect([q.limit, q.windowMs]).toEqual([500, 60_000]);
  });

  it('keeps every explicit field', () => {
    const cost = () => 2;
    const p = definePolicy({
      name: 'x.y_z-1',
      algorithm: 'fixed-window',
      rate: { limit: 5, window: '1h' },
      cost,
      failMode: 'local',
      shadow: true,
      scope: 'route',
    });
    expect(p).toMatchObject({
      name: 'x.y_z-1',
      limit: 5,
      windowMs: 3_600_000,
      failMode: 'local',
      shadow: true,
    });
    expect(p.cost).toBe(cost);
    expect(p.scope).toBe('route');
  });

  it('returns a compiled policy unchanged, but validates copies again', () => {
    const p = definePolicy({ name: 'a', limit: 1, window: 1000 });
    expect(definePolicy(p)).toBe(p);
    expect(isCompiledPolicy(p)).toBe(true);
    expect(isCompiledPolicy({ ...p })).toBe(false);
    expect(() => definePolicy({ ...p } as PolicyInput)).toThrow(
      'policy "a": "windowMs" is not a policy field (known: name, algorithm, limit, window, rate, burst, cost, failMode, shadow, scope, ban, lease, local, leaseMs, maxWaitMs, quota), got 1000',
    );
  });
});

describe('parseDuration and parseRate', () => {
  it.each([
    ['500ms', 500],
    ['10s', 10_000],
    ['1.5s', 1500],
    ['1m', 60_000],
    ['2min', 120_000],
    ['1h', 3_600_000],
    ['1d', 86_400_000],
    [' 30 s ', 30_000],
    ['250', 250],
    [1, 1],
    [60_000, 60_000],
  ] as const)('%j is %d ms', (input, ms) => {
    expect(parseDuration(input, 'window')).toBe(ms);
  });

  it.each([
    ['100/s', 100, 1000],
    ['5/10s', 5, 10_000],
    ['1000/1m', 1000, 60_000],
    ['20 / 500ms', 20, 500],
    ['3/h', 3, 3_600_000],
  ] as const)('rate %j is %d per %d ms', (input, limit, windowMs) => {
    expect(parseRate(input)).toEqual({ limit, windowMs });
  });

  it('names the field without a policy', () => {
    expect(() => parseDuration('soon', 'timeout')).toThrow(
      `"timeout" must be a duration such as '500ms', '10s', '1m', '1h', '1d' or a number of milliseconds, got "soon"`,
    );
  });
});

const DURATION_HINT =
  "must be a duration such as '500ms', '10s', '1m', '1h', '1d' or a number of milliseconds";
const KNOWN =
  '(known: name, algorithm, limit, window, rate, burst, cost, failMode, shadow, scope, ban, lease, local, leaseMs, maxWaitMs, quota)';

/** Every bad configuration, with the exact message and field it must produce. */
const BAD: readonly (readonly [string, unknown, string, string])[] = [
  [
    'not an object',
    'burst',
    'policy',
    `"policy" must be an object such as { name, limit, window }, got "burst"`,
  ],
  ['null', null, 'policy', `"policy" must be an object such as { name, limit, window }, got null`],
  ['missing name', { limit: 1, window: '1s' }, 'name', `"name" must be a non-empty string, got undefined`],
  ['empty name', { name: '', limit: 1, window: '1s' }, 'name', `"name" must be a non-empty string, got ""`],
  [
    'name with a brace',
    { name: 'a{b}', limit: 1, window: '1s' },
    'name',
    `"name" must be at most 64 letters, digits, '_', '-' or '.', starting with a letter, digit or '_', got "a{b}"`,
  ],
  [
    'name with a colon',
    { name: 'a:b', limit: 1, window: '1s' },
    'name',
    `"name" must be at most 64 letters, digits, '_', '-' or '.', starting with a letter, digit or '_', got "a:b"`,
  ],
  [
    'unknown field',
    { name: 'p', limt: 5, window: '1s' },
    'limt',
    `policy "p": "limt" is not a policy field ${KNOWN}, got 5`,
  ],
  [
    'unknown algorithm',
    { name: 'p', algorithm: 'leaky-bucket', limit: 1, window: '1s' },
    'algorithm',
    `policy "p": "algorithm" must be one of token-bucket, gcra, sliding-window, fixed-window, sliding-log, concurrency, got "leaky-bucket"`,
  ],
  [
    'negative limit',
    { name: 'p', limit: -1, window: '1s' },
    'limit',
    `policy "p": "limit" must be a positive integer, got -1`,
  ],
  [
    'zero limit',
    { name: 'p', limit: 0, window: '1s' },
    'limit',
    `policy "p": "limit" must be a positive integer, got 0`,
  ],
  [
    'NaN limit',
    { name: 'p', limit: Number.NaN, window: '1s' },
    'limit',
    `policy "p": "limit" must be a positive integer, got NaN`,
  ],
  [
    'Infinity limit',
    { name: 'p', limit: Number.POSITIVE_INFINITY, window: '1s' },
    'limit',
    `policy "p": "limit" must be a positive integer, got Infinity`,
  ],
  [
    'fractional limit',
    { name: 'p', limit: 1.5, window: '1s' },
    'limit',
    `policy "p": "limit" must be a positive integer, got 1.5`,
  ],
  [
    'sliding-log limit past the cap',
    { name: 'p', algorithm: 'sliding-log', limit: 501, window: '1s' },
    'limit',
    `policy "p": "limit" must allow at most 500 units per window for sliding-log (each decision reads the whole log from Redis, so its cost grows with the limit); use algorithm 'sliding-window' for larger quotas, got 501`,
  ],
  [
    'sliding-log rate past the cap (200000/1h, which read 30 000 records per decision)',
    { name: 'p', algorithm: 'sliding-log', rate: '200000/1h' },
    'rate',
    `policy "p": "rate" must allow at most 500 units per window for sliding-log (each decision reads the whole log from Redis, so its cost grows with the limit); use algorithm 'sliding-window' for larger quotas, got "200000/1h"`,
  ],
  [
    'string limit',
    { name: 'p', limit: '10', window: '1s' },
    'limit',
    `policy "p": "limit" must be a positive integer, got "10"`,
  ],
  [
    'missing limit',
    { name: 'p', window: '1s' },
    'limit',
    `policy "p": "limit" is required (give "limit" and "window", or "rate"), got undefined`,
  ],
  [
    'missing window',
    { name: 'p', limit: 5 },
    'window',
    `policy "p": "window" is required with "limit" (e.g. '1m', '10s' or milliseconds), got undefined`,
  ],
  [
    'unparseable window',
    { name: 'p', limit: 5, window: 'soon' },
    'window',
    `policy "p": "window" ${DURATION_HINT}, got "soon"`,
  ],
  [
    'unknown unit',
    { name: 'p', limit: 5, window: '5 weeks' },
    'window',
    `policy "p": "window" ${DURATION_HINT}, got "5 weeks"`,
  ],
  [
    'negative window',
    { name: 'p', limit: 5, window: -1000 },
    'window',
    `policy "p": "window" must be a positive, finite duration, got -1000`,
  ],
  [
    'zero window',
    { name: 'p', limit: 5, window: '0s' },
    'window',
    `policy "p": "window" must be a positive, finite duration, got "0s"`,
  ],
  [
    'Infinity window',
    { name: 'p', limit: 5, window: Number.POSITIVE_INFINITY },
    'window',
    `policy "p": "window" must be a positive, finite duration, got Infinity`,
  ],
  [
    'sub-millisecond window',
    { name: 'p', limit: 5, window: '0.5ms' },
    'window',
    `policy "p": "window" must be a whole number of milliseconds, got "0.5ms"`,
  ],
  [
    'window over a year',
    { name: 'p', limit: 5, window: '400d' },
    'window',
    `policy "p": "window" must be at most 366 days, got "400d"`,
  ],
  [
    'rate and limit',
    { name: 'p', rate: '10/s', limit: 10 },
    'rate',
    `policy "p": "rate" cannot be combined with "limit" or "window" (give either "rate" or "limit" and "window"), got "10/s"`,
  ],
  [
    'rate and window',
    { name: 'p', rate: '20/s', window: '1s' },
    'rate',
    `policy "p": "rate" cannot be combined with "limit" or "window" (give either "rate" or "limit" and "window"), got "20/s"`,
  ],
  [
    'rate without slash',
    { name: 'p', rate: '100' },
    'rate',
    `policy "p": "rate" must look like '100/s', '5/10s' or '1000/1m', got "100"`,
  ],
  [
    'rate with a bad unit',
    { name: 'p', rate: '100/fortnight' },
    'rate',
    `policy "p": "rate" must end in a duration such as 's', '10s' or '1m', got "100/fortnight"`,
  ],
  [
    'rate with zero units',
    { name: 'p', rate: '0/s' },
    'rate',
    `policy "p": "rate" must start with a positive whole number of units, got "0/s"`,
  ],
  [
    'rate with fractional units',
    { name: 'p', rate: '0.5/s' },
    'rate',
    `policy "p": "rate" must start with a positive whole number of units, got "0.5/s"`,
  ],
  [
    'rate object with bad limit',
    { name: 'p', rate: { limit: -5, window: '1s' } },
    'rate.limit',
    `policy "p": "rate.limit" must be a positive integer, got -5`,
  ],
  [
    'rate object with bad window',
    { name: 'p', rate: { limit: 5, window: 'x' } },
    'rate.window',
    `policy "p": "rate.window" ${DURATION_HINT}, got "x"`,
  ],
  [
    'rate of the wrong type',
    { name: 'p', rate: 100 },
    'rate',
    `policy "p": "rate" must be a string such as '100/s' or { limit, window }, got 100`,
  ],
  [
    'negative burst',
    { name: 'p', rate: '1/s', burst: -1 },
    'burst',
    `policy "p": "burst" must be a positive integer, got -1`,
  ],
  [
    'zero burst',
    { name: 'p', rate: '1/s', burst: 0 },
    'burst',
    `policy "p": "burst" must be a positive integer, got 0`,
  ],
  [
    'NaN burst',
    { name: 'p', rate: '1/s', burst: Number.NaN },
    'burst',
    `policy "p": "burst" must be a positive integer, got NaN`,
  ],
  [
    'burst on a window algorithm',
    { name: 'p', algorithm: 'sliding-window', limit: 3, window: '1m', burst: 5 },
    'burst',
    `policy "p": "burst" applies only to token-bucket and gcra (sliding-window admits "limit" units per "window"), got 5`,
  ],
  [
    'burst below cost',
    { name: 'p', rate: '2/s', burst: 4, cost: 5 },
    'burst',
    `policy "p": "burst" must be at least the policy's cost (5), got 4`,
  ],
  [
    'limit below cost',
    { name: 'p', algorithm: 'fixed-window', limit: 3, window: '1m', cost: 4 },
    'limit',
    `policy "p": "limit" must be at least the policy's cost (4), got 3`,
  ],
  [
    'negative cost',
    { name: 'p', limit: 3, window: '1m', cost: -1 },
    'cost',
    `policy "p": "cost" must be a positive, finite number (or a function of the descriptor), got -1`,
  ],
  [
    'zero cost',
    { name: 'p', limit: 3, window: '1m', cost: 0 },
    'cost',
    `policy "p": "cost" must be a positive, finite number (or a function of the descriptor), got 0`,
  ],
  [
    'NaN cost',
    { name: 'p', limit: 3, window: '1m', cost: Number.NaN },
    'cost',
    `policy "p": "cost" must be a positive, finite number (or a function of the descriptor), got NaN`,
  ],
  [
    'Infinity cost',
    { name: 'p', limit: 3, window: '1m', cost: Number.POSITIVE_INFINITY },
    'cost',
    `policy "p": "cost" must be a positive, finite number (or a function of the descriptor), got Infinity`,
  ],
  [
    'fractional cost on a window algorithm',
    { name: 'p', algorithm: 'sliding-log', limit: 3, window: '1m', cost: 0.5 },
    'cost',
    `policy "p": "cost" must be a whole number for sliding-log (fractions are for token-bucket and gcra) (or a function of the descriptor), got 0.5`,
  ],
  [
    'unknown fail mode',
    { name: 'p', limit: 3, window: '1m', failMode: 'fallback' },
    'failMode',
    `policy "p": "failMode" must be one of closed, open, local, lease, got "fallback"`,
  ],
  [
    'shadow not a boolean',
    { name: 'p', limit: 3, window: '1m', shadow: 'yes' },
    'shadow',
    `policy "p": "shadow" must be true or false, got "yes"`,
  ],
  [
    'unknown scope',
    { name: 'p', limit: 3, window: '1m', scope: 'ip' },
    'scope',
    `policy "p": "scope" must be 'identity' or 'route', got "ip"`,
  ],
];

describe('definePolicy: bad configurations', () => {
  it.each(BAD)('%s', (_label, input, field, message) => {
    let error: unknown;
    try {
      definePolicy(input as PolicyInput);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(PolicyError);
    const policyError = error as PolicyError;
    expect(policyError.message).toBe(message);
    expect(policyError.code).toBe('INVALID_POLICY');
    expect(policyError.field).toBe(field);
    expect(policyError.name).toBe('PolicyError');
  });

  it('every message in the table is distinct', () => {
    const messages = BAD.map((row) => row[3]);
    expect(new Set(messages).size).toBe(messages.length);
  });

  it('fractional costs are fine for bucket algorithms', () => {
    expect(definePolicy({ name: 'p', rate: '1/s', burst: 2, cost: 0.25 }).cost).toBe(0.25);
  });
});

describe('definePolicies', () => {
  it('rejects duplicate names in one limiter', () => {
    expect(() =>
      definePolicies([
        { name: 'burst', limit: 1, window: '1s' },
        { name: 'burst', limit: 2, window: '1s' },
      ]),
    ).toThrow(`policy "burst": "name" must be unique within one limiter; it appears twice, got "burst"`);
  });

  it('rejects an empty list', () => {
    expect(() => definePolicies([])).toThrow(
      `"policies" must be a non-empty array of policies, got an array`,
    );
  });

  it('compiles in order', () => {
    const out = definePolicies([
      { name: 'a', limit: 1, window: '1s' },
      { name: 'b', rate: '2/s' },
    ]);
    expect(out.map((p) => p.name)).toEqual(['a', 'b']);
  });
});
