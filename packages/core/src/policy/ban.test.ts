import { describe, expect, it } from 'vitest';
import { definePolicy } from './define-policy.js';

const base = { name: 'login', algorithm: 'fixed-window', limit: 5, window: '1m' } as const;

describe('policy ban', () => {
  it('compiles durations to milliseconds; no escalation means violations 0', () => {
    expect(definePolicy({ ...base, ban: { blockMs: '15m' } }).ban).toEqual({
      blockMs: 900_000,
      violations: 0,
      violationWindowMs: 0,
      escalatedBlockMs: 900_000,
    });
    expect(
      definePolicy({
        ...base,
        ban: { blockMs: 60_000, escalation: { violations: 3, windowMs: '1h', blockMs: '1d' } },
      }).ban,
    ).toEqual({ blockMs: 60_000, violations: 3, violationWindowMs: 3_600_000, escalatedBlockMs: 86_400_000 });
    expect(definePolicy(base).ban).toBeUndefined();
    expect('ban' in definePolicy(base)).toBe(false);
  });

  it.each([
    [{ blockMs: -5 }, 'policy "login": "ban.blockMs" must be a positive, finite duration, got -5'],
    [{ blockMs: 'soon' }, /"ban\.blockMs" must be a duration such as .*, got "soon"/],
    [{}, /"ban\.blockMs" is required/],
    [5, /"ban" must be an object such as \{ blockMs: '1m' \}, got 5/],
    [
      { blockMs: 1000, durationMs: 5 },
      /"ban\.durationMs" is not a field of ban \(known: blockMs, escalation\), got 5/,
    ],
    [
      { blockMs: 1000, escalation: { violations: 1, windowMs: 1000, blockMs: 2000 } },
      /"ban\.escalation\.violations" must be a whole number of at least 2 .*, got 1/,
    ],
    [
      { blockMs: 1000, escalation: { violations: 3, windowMs: 1000, blockMs: 500 } },
      /"ban\.escalation\.blockMs" must be at least ban\.blockMs \(1000 ms\), got 500/,
    ],
    [
      { blockMs: 1000, escalation: { violations: 3, blockMs: 5000 } },
      /"ban\.escalation\.windowMs" is required/,
    ],
    [{ blockMs: 1000, escalation: 'often' }, /"ban\.escalation" must be an object/],
  ])('rejects %j, naming the field and the value', (ban, message) => {
    expect(() => definePolicy({ ...base, ban: ban as never })).toThrow(message);
  });
});
