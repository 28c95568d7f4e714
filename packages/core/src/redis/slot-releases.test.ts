/**
 * Releases of concurrency slots batched per event-loop turn on a real redis-server: the releases of
 * one turn go out as ONE slots-script call on a single Redis, each caller gets its own flags, a
 * slot released twice answers false the second time, and a bad slot fails only its own caller.
 */
import { describe, expect, it } from 'vitest';
import { useRedis } from '../../../../test/support/redis-fixture.js';
import { definePolicy } from '../policy/define-policy.js';
import { RedisStore } from '../stores/redis-store.js';
import type { SlotRef, StoreEntry } from '../types.js';

const redis = useRedis();
const IN_FLIGHT = definePolicy({ name: 'in-flight', algorithm: 'concurrency', limit: 2, leaseMs: 10_000 });

/** Calls of EVALSHA the server counted so far. */
async function evalshaCalls(): Promise<number> {
  const stats = (await redis.admin.info('commandstats')) as string;
  const match = /cmdstat_evalsha:calls=(\d+)/.exec(stats);
  return match === null ? 0 : Number(match[1]);
}

describe('RedisStore releases', () => {
  it('sends the releases of one turn as one call and hands each caller its own flags', async () => {
    const store = new RedisStore({ client: redis.client });
    const slots: SlotRef[] = Array.from({ length: 10 }, (_v, i) => ({
      key: `rel:{t${i}}:in-flight`,
      policy: IN_FLIGHT,
      slotId: `s${i}`,
    }));
    const entries: StoreEntry[] = slots.map(({ key, policy, slotId }) => ({ key, policy, cost: 1, slotId }));
    const taken = await Promise.all(entries.map((entry) => store.decide([entry], 'consume')));
    expect(taken.every(([v]) => v?.allowed === true)).toBe(true);

    const before = await evalshaCalls();
    const flags = await Promise.all([
      store.releaseSlots(slots.slice(0, 4)),
      store.releaseSlots(slots.slice(4, 5)),
      store.releaseSlots([...slots.slice(5), { ...(slots[0] as SlotRef) }]),
    ]);
    expect(await evalshaCalls()).toBe(before + 1);
    // The first slot is released by the first caller; the third caller's copy of it finds it gone.
    expect(flags).toEqual([[true, true, true, true], [true], [true, true, true, true, true, false]]);
    expect(await store.releaseSlots([slots[1] as SlotRef])).toEqual([false]);
  });

  it('rejects a bad slot for its caller only, at once', async () => {
    const store = new RedisStore({ client: redis.client });
    const good = store.releaseSlots([{ key: 'rel:{g}:in-flight', policy: IN_FLIGHT, slotId: 'g1' }]);
    const bad = store.releaseSlots([{ key: 'rel:{b}:in-flight', policy: IN_FLIGHT, slotId: '' }]);
    await expect(bad).rejects.toThrow(/slotId/);
    expect(await good).toEqual([false]);
  });
});
