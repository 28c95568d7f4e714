import { describe, expect, it } from 'vitest';
import type { PolicyInput } from '../types.js';
import { definePolicy } from './define-policy.js';

const queued: PolicyInput = { name: 'queued', algorithm: 'token-bucket', burst: 5, rate: '10/s' };

describe('definePolicy: maxWaitMs (waiting for a turn)', () => {
  it('compiles a duration or ms for token-bucket and gcra', () => {
    expect(definePolicy({ ...queued, maxWaitMs: '1s' }).maxWaitMs).toBe(1000);
    expect(definePolicy({ ...queued, maxWaitMs: 250 }).maxWaitMs).toBe(250);
    expect(definePolicy({ ...queued, algorithm: 'gcra', maxWaitMs: '1h' }).maxWaitMs).toBe(3_600_000);
  });

  it('leaves it absent when unset or 0 (no waiting)', () => {
    expect('maxWaitMs' in definePolicy(queued)).toBe(false);
    expect('maxWaitMs' in definePolicy({ ...queued, maxWaitMs: 0 })).toBe(false);
  });

  it('names the field, the value and the alternative on a window algorithm', () => {
    for (const algorithm of ['fixed-window', 'sliding-window', 'sliding-log'] as const) {
      expect(() => definePolicy({ name: 'x', algorithm, limit: 5, window: '1s', maxWaitMs: 1000 })).toThrow(
        `policy "x": "maxWaitMs" works with token-bucket and gcra (they reserve a turn); policy "x" uses ${algorithm}: use token-bucket or gcra to wait, got 1000`,
      );
    }
  });

  it('refuses it with a lease or a local stage, naming both fields', () => {
    expect(() => definePolicy({ ...queued, maxWaitMs: 1000, lease: { units: 2, ttlMs: '1s' } })).toThrow(
      /"maxWaitMs" cannot be combined with "lease" .*got 1000/,
    );
    expect(() => definePolicy({ ...queued, maxWaitMs: 1000, local: { burst: 5, rate: '10/s' } })).toThrow(
      /"maxWaitMs" cannot be combined with "local" .*got 1000/,
    );
  });

  it('refuses more than one hour and anything but a positive duration', () => {
    expect(() => definePolicy({ ...queued, maxWaitMs: 3_600_001 })).toThrow(
      'policy "queued": "maxWaitMs" must be at most one hour (3600000 ms), got 3600001',
    );
    for (const bad of [-1, 1.5, Number.NaN, 'soon', '2d']) {
      expect(() => definePolicy({ ...queued, maxWaitMs: bad as number })).toThrow(
        /^policy "queued": "maxWaitMs" /,
      );
    }
  });
});
