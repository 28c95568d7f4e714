import { describe, expect, it } from 'vitest';
import { compilePolicies } from './compile-policies.js';
import { definePolicy } from './define-policy.js';

describe('compilePolicies', () => {
  it('compiles the shorthand into one policy named "default"', () => {
    const [policy, ...rest] = compilePolicies({ limit: 5, window: '1m', algorithm: 'fixed-window' });
    expect(rest).toEqual([]);
    expect(policy).toMatchObject({ name: 'default', algorithm: 'fixed-window', limit: 5, windowMs: 60_000 });
  });

  it('gives failMode to policies without one and shadow to every policy', () => {
    const policies = compilePolicies({
      policies: [
        { name: 'a', limit: 5, window: '1s' },
        { name: 'b', limit: 5, window: '1s', failMode: 'closed' },
      ],
      failMode: 'open',
      shadow: true,
    });
    expect(policies.map((p) => [p.name, p.failMode, p.shadow])).toEqual([
      ['a', 'open', true],
      ['b', 'closed', true],
    ]);
  });

  it('takes a policy compiled by definePolicy() as it is', () => {
    const compiled = definePolicy({ name: 'c', limit: 5, window: '1s' });
    expect(compilePolicies({ policies: [compiled], shadow: true })[0]).toBe(compiled);
  });

  it('rejects bad options naming the option and the value', () => {
    expect(() => compilePolicies({ limit: -1, window: '1m' })).toThrow(
      'rateLimit: "limit" must be a positive integer, got -1',
    );
    expect(() => compilePolicies({ limit: 5 })).toThrow(/"window" is required with "limit"/);
    expect(() => compilePolicies({ limit: 5, window: 'soon' })).toThrow(/"window".*soon/);
    expect(() => compilePolicies({})).toThrow(/"policies" must be a non-empty array/);
    expect(() => compilePolicies({ policies: ['a'] as never })).toThrow(/names a policy/);
    expect(() => compilePolicies({ policies: [{ name: 'a', limit: 1, window: '1s' }], limit: 1 })).toThrow(
      /"limit" cannot be combined with "policies"/,
    );
    expect(() =>
      compilePolicies({ policies: [{ name: 'a', limit: 1, window: '1s' }], algorithm: 'gcra' }),
    ).toThrow(/"algorithm" applies to the "limit" \+ "window" shorthand only/);
    expect(() => compilePolicies({ limit: 1, window: '1s', failMode: 'maybe' as never })).toThrow(
      /"failMode" must be one of closed, open, local, got "maybe"/,
    );
    expect(() => compilePolicies({ limit: 1, window: '1s', shadow: 'yes' as never })).toThrow(
      /"shadow" must be true or false/,
    );
    expect(() => compilePolicies({ limit: 1, window: '1s' }, 'RateLimitModule')).not.toThrow();
    expect(() => compilePolicies({ limit: 0, window: '1s' }, 'RateLimitModule')).toThrow(
      /^RateLimitModule: "limit"/,
    );
  });
});
