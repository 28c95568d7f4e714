import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { definePolicy } from '../../packages/core/src/policy/define-policy.js';
import type { SlotRef, StoreEntry } from '../../packages/core/src/types.js';
import { useClusterClients } from './connect.js';
import { createLimiter, identityTag, RedisStore } from './core.js';
import { keySlot } from './key-slot.js';

const CONNECTIONS = 4;
const LIMIT = 3;
const IDENTITIES = ['tenant-a', 'tenant-b', 'tenant-c', 'tenant-d', 'tenant-e', 'tenant-f'];

const fixture = useClusterClients(CONNECTIONS);
const { clients } = fixture;
let runId = 0;
const prefix = () => `cc${process.pid}x${++runId}`;

const inFlight = definePolicy({ name: 'in-flight', algorithm: 'concurrency', limit: LIMIT, leaseMs: '10s' });
const rate = definePolicy({ name: 'rate', algorithm: 'token-bucket', burst: 100, rate: '1/h' });
const keysOf = (p: string, identity: string) => ({
  slots: `${p}:{${identity}}:in-flight`,
  rate: `${p}:{${identity}}:rate`,
});

describe('concurrency slots on Redis Cluster', () => {
  it('decides a concurrency and a rate policy of one identity in one call, all or nothing, under contention', async () => {
    const p = prefix();
    const stores = clients.map((client) => new RedisStore({ client }));
    // The identities' keys lie on more than one primary.
    expect(new Set(IDENTITIES.map((id) => keySlot(keysOf(p, id).slots))).size).toBeGreaterThan(1);
    let n = 0;
    const checks = IDENTITIES.flatMap((identity) =>
      stores.flatMap((store) =>
        Array.from({ length: 5 }, () => {
          const keys = keysOf(p, identity);
          const entries: StoreEntry[] = [
            { key: keys.slots, policy: inFlight, cost: 1, slotId: `slot-${++n}` },
            { key: keys.rate, policy: rate, cost: 1 },
          ];
          return store.decide(entries, 'consume').then((verdicts) => ({ identity, verdicts }));
        }),
      ),
    );
    const results = await Promise.all(checks);
    for (const identity of IDENTITIES) {
      const mine = results.filter((r) => r.identity === identity);
      const admitted = mine.filter((r) => r.verdicts.every((v) => v.allowed));
      expect(admitted, identity).toHaveLength(LIMIT);
      // A check that got no slot was charged no rate unit.
      const [slotsVerdict, rateVerdict] = await stores[0]!.decide(
        [
          { key: keysOf(p, identity).slots, policy: inFlight, cost: 1 },
          { key: keysOf(p, identity).rate, policy: rate, cost: 1 },
        ],
        'peek',
      );
      expect(slotsVerdict).toMatchObject({ allowed: false, remaining: 0 });
      expect(rateVerdict?.remaining).toBe(100 - LIMIT);
    }
  });

  it('releases and renews slots of identities on several primaries in one store call', async () => {
    const p = prefix();
    const store = new RedisStore({ client: clients[0]! });
    const held: SlotRef[] = [];
    for (const identity of IDENTITIES) {
      for (let i = 0; i < LIMIT; i++) {
        const slotId = `${identity}-${i}`;
        const key = keysOf(p, identity).slots;
        const [verdict] = await store.decide([{ key, policy: inFlight, cost: 1, slotId }], 'consume');
        expect(verdict?.allowed).toBe(true);
        held.push({ key, policy: inFlight, slotId });
      }
    }
    const owner = clients[1]!;
    const scoreOf = (slot: SlotRef) => owner.zscore(slot.key, slot.slotId);
    const before = await Promise.all(held.map(scoreOf));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await store.renewSlots(held)).toEqual(held.map(() => true));
    const after = await Promise.all(held.map(scoreOf));
    for (let i = 0; i < held.length; i++) expect(Number(after[i])).toBeGreaterThan(Number(before[i]));

    const first = held.filter((_, i) => i % LIMIT === 0);
    expect(await store.releaseSlots([...first, ...first])).toEqual([
      ...first.map(() => true),
      ...first.map(() => false),
    ]);
    // A freed slot admits at once; a released slot renews as lost, never taken again.
    for (const slot of first) {
      const [verdict] = await store.decide(
        [{ key: slot.key, policy: inFlight, cost: 1, slotId: `${slot.slotId}-again` }],
        'consume',
      );
      expect(verdict?.allowed).toBe(true);
    }
    expect(await store.renewSlots(first)).toEqual(first.map(() => false));
    expect(await Promise.all(first.map(scoreOf))).toEqual(first.map(() => null));
  });

  it('a check answered unavailable holds no slot: the slot its late answer took is released when it arrives', async () => {
    const p = prefix();
    const policies = [{ name: 'in-flight', algorithm: 'concurrency' as const, limit: 1, leaseMs: '10s' }];
    const [slow, other] = [clients[0]!, clients[1]!].map((client) =>
      createLimiter({
        policies,
        prefix: p,
        store: new RedisStore({ client }),
        timeoutMs: 50,
        breaker: false,
      }),
    ) as [ReturnType<typeof createLimiter>, ReturnType<typeof createLimiter>];
    const warm = await slow.check({ identity: 't' });
    expect(warm.allowed).toBe(true);
    await slow.release(warm);
    // The primary that holds the identity's slot answers 300 ms late.
    const key = `${identityTag(p, 't')}:in-flight`;
    const { primaries } = await fixture.cluster.topology();
    const owner = primaries.find((node) =>
      node.slots.some(([from, to]) => keySlot(key) >= from && keySlot(key) <= to),
    );
    const admin = new Redis({ host: '127.0.0.1', port: owner!.port });
    await admin.call('CLIENT', 'PAUSE', '300');
    const missed = await slow.check({ identity: 't' });
    expect(missed.outcome).toBe('unavailable');
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(await admin.zcard(key)).toBe(0);
    const next = await other.check({ identity: 't' });
    expect(next.allowed).toBe(true);
    await other.release(next);
    admin.disconnect();
  });
});
