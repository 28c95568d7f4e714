/**
 * Regional quota policies (`quota: { service, bucket }`): admitted in-process from the share the
 * service holds, no store call per request; with no live assignment the policy's fail mode
 * decides; bad quotas and a limiter mixing quota and store policies throw naming the field. The
 * service here is a plain in-process source (the gRPC one, `QuotaClient`, is tested with
 * @sluice/server).
 */
import { describe, expect, it } from 'vitest';
import type { QuotaSource, QuotaTake } from '../model/quota.js';
import { definePolicies, definePolicy } from '../policy/define-policy.js';
import { PolicyError } from '../policy/errors.js';
import { createLimiter } from './create-limiter.js';
import { SwitchableStore } from './test-stores.test-support.js';

/** A source whose one bucket admits `share` units, then denies; `assigned` false: unassigned. */
class FixedShare implements QuotaSource {
  share = 2;
  assigned = true;
  readonly asked: Record<string, string>[] = [];
  taken = 0;

  bucket(id: Readonly<Record<string, string>>) {
    this.asked.push({ ...id });
    return {
      take: (cost = 1): QuotaTake => {
        if (!this.assigned) return 'unassigned';
        if (this.taken + cost > this.share) return 'denied';
        this.taken += cost;
        return 'allowed';
      },
    };
  }
}

const clock = () => 1_764_400_000_000;

function quotaLimiter(source: QuotaSource, failMode: 'closed' | 'open' = 'closed') {
  const store = new SwitchableStore(clock);
  const limiter = createLimiter({
    store,
    clock,
    policies: [
      {
        name: 'regional',
        limit: 100,
        window: '1s',
        failMode,
        quota: { service: source, bucket: { api: 'search' } },
      },
    ],
  });
  return { limiter, store };
}

describe('quota policies', () => {
  it('admit from the share, then deny, with no store call', async () => {
    const source = new FixedShare();
    const { limiter, store } = quotaLimiter(source);
    const decisions = [];
    for (let i = 0; i < 3; i++) decisions.push(await limiter.check({ identity: `client-${i}` }));
    expect(decisions.map((d) => d.outcome)).toEqual(['allowed', 'allowed', 'over_limit']);
    expect(decisions.map((d) => d.source)).toEqual(['quota', 'quota', 'quota']);
    expect(decisions[2]?.retryAfterMs).toBeGreaterThan(0);
    expect(store.calls).toEqual([]);
    expect(source.asked).toEqual([{ api: 'search' }]);
  });

  it('with no live assignment: closed denies as unavailable, open admits', async () => {
    const closed = new FixedShare();
    closed.assigned = false;
    const denied = await quotaLimiter(closed, 'closed').limiter.check({ identity: 'a' });
    expect([denied.allowed, denied.outcome, denied.source]).toEqual([false, 'unavailable', 'fail-closed']);
    const open = new FixedShare();
    open.assigned = false;
    const admitted = await quotaLimiter(open, 'open').limiter.check({ identity: 'a' });
    expect([admitted.allowed, admitted.source]).toEqual([true, 'fail-open']);
  });

  it('refuses a bad quota at construction, naming the field', () => {
    const base = { name: 'q', limit: 10, window: '1s' };
    const service = new FixedShare();
    const bad: [unknown, RegExp][] = [
      ['search', /"quota".*must be an object/],
      [{ service, bucket: { api: 'x' }, size: 3 }, /quota\.size/],
      [{ service: {}, bucket: { api: 'x' } }, /quota\.service/],
      [{ service, bucket: {} }, /quota\.bucket/],
      [{ service, bucket: { api: '' } }, /quota\.bucket\.api/],
    ];
    for (const [quota, message] of bad) {
      expect(() => definePolicy({ ...base, quota } as never)).toThrow(message);
    }
    expect(() =>
      definePolicy({ ...base, quota: { service, bucket: { api: 'x' } }, lease: { units: 1, ttlMs: 100 } }),
    ).toThrow(/"lease".*cannot be combined with "quota"/);
    expect(() =>
      definePolicy({ ...base, quota: { service, bucket: { api: 'x' } }, failMode: 'lease' } as never),
    ).toThrow(PolicyError);
  });

  it('refuses a limiter that mixes quota and store policies', () => {
    const service = new FixedShare();
    expect(() =>
      definePolicies([
        { name: 'q', limit: 10, window: '1s', quota: { service, bucket: { api: 'x' } } },
        { name: 'store', limit: 10, window: '1s' },
      ]),
    ).toThrow(/"quota".*every policy of its limiter or none/);
  });
});
