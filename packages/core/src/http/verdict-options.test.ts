import { describe, expect, it } from 'vitest';
import { decision, result } from './fixtures.test-util.js';
import { toHttpVerdict } from './verdict.js';

describe('toHttpVerdict options', () => {
  const d = decision([
    result({ policy: 'enforced', limit: 10, remaining: 8, resetMs: 2500 }),
    result({ policy: 'probe', limit: 5, remaining: 0, resetMs: 9000, shadow: true }),
  ]);

  it('uses the given nowMs for the legacy reset timestamp', () => {
    const verdict = toHttpVerdict(d, { headers: 'legacy', nowMs: 1_000_000_100 });
    expect(verdict.headers['X-RateLimit-Reset']).toBe('1000003'); // ceil((1_000_000_100 + 2500) / 1000)
  });

  it('shows shadow policies only when asked, with and without nowMs', () => {
    for (const nowMs of [undefined, 1_000_000_000]) {
      expect(toHttpVerdict(d, { nowMs }).headers.RateLimit).toBe('"enforced";r=8;t=3');
      expect(toHttpVerdict(d, { nowMs, shadowHeaders: false }).headers.RateLimit).toBe('"enforced";r=8;t=3');
      expect(toHttpVerdict(d, { nowMs, shadowHeaders: true }).headers.RateLimit).toBe(
        '"enforced";r=8;t=3, "probe";r=0;t=9',
      );
    }
  });
});
