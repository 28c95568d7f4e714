import { describe, expect, it } from 'vitest';
import { definePolicy } from '../../packages/core/src/policy/index.js';
import type { StoreEntry, StoreVerdict } from '../../packages/core/src/types.js';
import { useClusterClients } from './connect.js';
import { identityTag, RedisStore } from './core.js';
import { keySlot } from './key-slot.js';

const INSTANCES = 4;
const CHECKS = 12;
const IDENTITIES = ['tenant-a', 'tenant-b', 'tenant-c', 'tenant-d', 'tenant-e', 'tenant-f'];
/** A whole ms time every store uses (explicit: the turns are exact). */
const T0 = 1_764_400_200_000;

const fixture = useClusterClients(INSTANCES);
const { clients } = fixture;

describe('waiting on the 3+3 Cluster', () => {
  it('a waiting check with two policies of one identity: turns in arrival order, all or nothing', async () => {
    // burst 2, 10/s (a turn every 100 ms) and burst 3, 5/s (every 200 ms); both wait up to 1 s.
    const fast = definePolicy({
      name: 'fast',
      algorithm: 'token-bucket',
      burst: 2,
      rate: '10/s',
      maxWaitMs: 1000,
    });
    const slow = definePolicy({ name: 'slow', algorithm: 'gcra', burst: 3, rate: '5/s', maxWaitMs: 1000 });
    const stores = clients.map((client) => new RedisStore({ client, clock: () => T0 }));
    const prefix = `w${process.pid}`;
    const { primaries } = await fixture.cluster.topology();
    const primaryOf = (key: string) =>
      primaries.find((p) => p.slots.some(([from, to]) => keySlot(key) >= from && keySlot(key) <= to))?.port;
    const tags = IDENTITIES.map((identity) => identityTag(prefix, identity));
    expect(new Set(tags.map((tag) => primaryOf(`${tag}:fast`))).size).toBe(3);

    const checks: Promise<StoreVerdict[]>[] = [];
    for (let i = 0; i < CHECKS; i++) {
      for (const [t, tag] of tags.entries()) {
        const entries: StoreEntry[] = [
          { key: `${tag}:fast`, policy: fast, cost: 1, maxWaitMs: 1000 },
          { key: `${tag}:slow`, policy: slow, cost: 1, maxWaitMs: 1000 },
        ];
        checks.push((stores[(i + t) % INSTANCES] as RedisStore).decide(entries, 'consume'));
      }
    }
    const answers = await Promise.all(checks);
    for (const [t] of tags.entries()) {
      const mine = answers.filter((_, k) => k % tags.length === t);
      const admitted = mine.filter(([a, b]) => a?.allowed && b?.allowed);
      // All or nothing: a check is admitted by both policies or charged by neither.
      for (const [a, b] of mine) expect(a?.allowed, `tenant ${t}`).toBe(b?.allowed);
      // The slow policy's queue: 3 now, then a turn every 200 ms up to 1 s: 8 checks; the fast one
      // (turns every 100 ms) reserves for exactly those, so its turns are 0, 0, 100, ... 600.
      const slowWaits = admitted.map(([, b]) => b?.waitMs ?? 0).sort((x, y) => x - y);
      const fastWaits = admitted.map(([a]) => a?.waitMs ?? 0).sort((x, y) => x - y);
      expect(slowWaits).toEqual([0, 0, 0, 200, 400, 600, 800, 1000]);
      expect(fastWaits).toEqual([0, 0, 100, 200, 300, 400, 500, 600]);
      // Each check's turns are the next in both queues (the same call reserved both): ordered by
      // its fast turn, the checks' slow turns never go back.
      const pairs = admitted.map(([a, b]) => [a?.waitMs ?? 0, b?.waitMs ?? 0] as const);
      const byFast = pairs.sort((x, y) => x[0] - y[0] || x[1] - y[1]).map(([, slowMs]) => slowMs);
      expect(byFast).toEqual(slowWaits);
      // The rest were answered at once with the real wait of the later turn (1.2 s > 1 s).
      for (const [, b] of mine.filter(([a]) => !a?.allowed))
        expect(b).toMatchObject({ allowed: false, retryAfterMs: 1200 });
    }
  });
});
