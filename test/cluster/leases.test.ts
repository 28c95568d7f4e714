/**
 * Leases on a real 3-primary + 3-replica Redis Cluster: 4 instances (one Cluster connection and
 * limiter each) on several identities spread over the primaries never admit more than the policy
 * allows per identity, leave at most instances x units unused, make about one script call per
 * lease (counted on every primary), and stay all or nothing beside an unleased policy.
 */
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { useClusterClients } from './connect.js';
import { createLimiter, type Decision, identityTag, type PolicyInput, RedisStore } from './core.js';

const INSTANCES = 4;
const UNITS = 10;
const NO_REFILL = '366d';
const IDENTITIES = ['tenant-a', 'tenant-b', 'tenant-c', 'tenant-d', 'tenant-e', 'tenant-f'];

const fixture = useClusterClients(INSTANCES);
const { clients } = fixture;
let runId = 0;
const prefix = () => `l${process.pid}x${++runId}`;

/** Script calls run so far, summed over the primaries. */
async function scriptCalls(): Promise<number> {
  const { primaries } = await fixture.cluster.topology();
  let calls = 0;
  for (const { port } of primaries) {
    const node = new Redis(port, '127.0.0.1');
    try {
      const info = await node.info('commandstats');
      for (const m of info.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)) calls += Number(m[1]);
    } finally {
      node.disconnect();
    }
  }
  return calls;
}

function fleet(policies: PolicyInput[], p: string) {
  return clients.map((client) =>
    createLimiter({
      policies,
      prefix: p,
      store: new RedisStore({ client }),
      timeoutMs: 20_000,
      breaker: false,
      denyCache: false,
    }),
  );
}

/** `perIdentity` checks of every identity at once, spread over the instances. */
async function burst(policies: PolicyInput[], p: string, perIdentity: number) {
  const limiters = fleet(policies, p);
  const before = await scriptCalls();
  const checks: Promise<[string, Decision]>[] = [];
  for (let i = 0; i < perIdentity; i++) {
    for (const identity of IDENTITIES) {
      const limiter = limiters[(i + checks.length) % INSTANCES]!;
      checks.push(limiter.check({ identity }).then((d) => [identity, d]));
    }
  }
  const decisions = await Promise.all(checks);
  const calls = (await scriptCalls()) - before;
  const admitted = new Map<string, number>(IDENTITIES.map((id) => [id, 0]));
  for (const [identity, d] of decisions) {
    expect(d.outcome === 'allowed' || d.outcome === 'over_limit').toBe(true);
    if (d.allowed) admitted.set(identity, (admitted.get(identity) ?? 0) + 1);
  }
  return { admitted, calls };
}

/** What a fresh limiter reads as left for `identity`, per policy. */
async function remaining(
  policies: PolicyInput[],
  p: string,
  identity: string,
): Promise<Record<string, number>> {
  const peeked = await fleet(policies, p)[0]!.peek({ identity });
  return Object.fromEntries(peeked.results.map((r) => [r.policy, r.remaining]));
}

describe('leases on the Cluster', () => {
  it('spreads the identities over more than one primary', async () => {
    const slots = await Promise.all(
      IDENTITIES.map((id) => clients[0]!.cluster('KEYSLOT', `${identityTag('x', id)}:leased`)),
    );
    const { primaries } = await fixture.cluster.topology();
    const owners = new Set(
      slots.map(
        (slot) =>
          primaries.find((pr) => pr.slots.some(([a, b]) => Number(slot) >= a && Number(slot) <= b))?.port,
      ),
    );
    expect(owners.size).toBeGreaterThan(1);
  });

  it('per identity, of 400 checks at once at most 100 admitted and at least 100 - 4 x 10, about one call per lease', async () => {
    const policy: PolicyInput = {
      name: 'leased',
      burst: 100,
      rate: `100/${NO_REFILL}`,
      lease: { units: UNITS, ttlMs: '1m' },
    };
    const { admitted, calls } = await burst([policy], prefix(), 400);
    let total = 0;
    for (const [identity, n] of admitted) {
      expect(n, identity).toBeLessThanOrEqual(100);
      expect(n, identity).toBeGreaterThanOrEqual(100 - INSTANCES * UNITS);
      total += n;
    }
    // A lease pays up to 10 admissions; each instance's denied take of an identity is remembered.
    expect(calls).toBeLessThanOrEqual(Math.ceil((1.2 * total) / UNITS) + 2 * INSTANCES * IDENTITIES.length);
  });

  it('with a large budget, script calls per admitted request at most 1.2/units', async () => {
    const policy: PolicyInput = {
      name: 'leased',
      burst: 10_000,
      rate: `10000/${NO_REFILL}`,
      lease: { units: UNITS, ttlMs: '1m' },
    };
    const { admitted, calls } = await burst([policy], prefix(), 500);
    const total = [...admitted.values()].reduce((a, b) => a + b, 0);
    expect(total).toBe(500 * IDENTITIES.length);
    expect(calls / total).toBeLessThanOrEqual(1.2 / UNITS);
  });

  it('beside an unleased policy, all or nothing: the leased one charged at most admitted + 4 x 10', async () => {
    const leased: PolicyInput = {
      name: 'leased',
      burst: 1000,
      rate: `1000/${NO_REFILL}`,
      lease: { units: UNITS, ttlMs: '1m' },
    };
    const strict: PolicyInput = { name: 'strict', algorithm: 'fixed-window', limit: 30, window: NO_REFILL };
    const p = prefix();
    const { admitted } = await burst([leased, strict], p, 200);
    for (const identity of IDENTITIES) {
      expect(admitted.get(identity), identity).toBe(30);
      const left = await remaining([leased, strict], p, identity);
      expect(left.strict).toBe(0);
      expect(1000 - (left.leased as number)).toBeGreaterThanOrEqual(30);
      expect(1000 - (left.leased as number)).toBeLessThanOrEqual(30 + INSTANCES * UNITS);
    }
  });
});
