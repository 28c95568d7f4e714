/**
 * Redis memory is part of the policy. Against real redis-servers with a small `maxmemory`:
 * what `allkeys-lru` and `noeviction` do to the limits when a flood of new identities fills
 * Redis, the bytes a key costs per algorithm, and the one-time warning for allkeys-* policies
 * (silent where CONFIG is not allowed). docs/failure-modes.md ("Redis memory") states these.
 */
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { resetWarnings } from '../../packages/core/src/warn.js';
import { createLimiter, type PolicyInput, RedisStore } from '../cluster/core.js';
import { type RedisProcess, startRedis } from '../support/redis-server.js';

/** The victim's policy: a burst of 20, one unit an hour (nothing refills during the test). */
const VICTIM: PolicyInput = { name: 'burst', burst: 20, rate: '1/h' };
const FLOOD_IDENTITIES = 20_000;

const started: RedisProcess[] = [];
const clients: Redis[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) c.disconnect();
  await Promise.all(started.splice(0).map((r) => r.stop()));
  resetWarnings();
  vi.restoreAllMocks();
});

async function redisWith(args: string[]): Promise<Redis> {
  const redis = await startRedis({ args });
  started.push(redis);
  const client = new Redis(redis.port, '127.0.0.1');
  clients.push(client);
  return client;
}

const info = async (client: Redis, field: string): Promise<number> => {
  const text = await client.info();
  const line = text.split('\r\n').find((l) => l.startsWith(`${field}:`));
  return Number(line?.slice(field.length + 1));
};

/** Checks `count` distinct new identities, 1000 at a time; returns the outcomes seen. */
async function flood(limiter: ReturnType<typeof createLimiter>, count: number): Promise<Map<string, number>> {
  const outcomes = new Map<string, number>();
  for (let start = 0; start < count; start += 1000) {
    const decisions = await Promise.all(
      Array.from({ length: Math.min(1000, count - start) }, (_, i) =>
        limiter.check({ identity: `flood-${start + i}` }),
      ),
    );
    for (const d of decisions) outcomes.set(d.outcome, (outcomes.get(d.outcome) ?? 0) + 1);
  }
  return outcomes;
}

async function admittedOf(limiter: ReturnType<typeof createLimiter>, identity: string, n: number) {
  let admitted = 0;
  for (let i = 0; i < n; i++) if ((await limiter.check({ identity })).allowed) admitted++;
  return admitted;
}

/** A Redis with room for some 5k keys over its own use, and a limiter on it (no deny cache). */
async function smallRedis(policy: string) {
  const probe = await redisWith([]);
  const baseline = await info(probe, 'used_memory');
  const maxmemory = baseline + 1024 * 1024;
  const client = await redisWith(['--maxmemory', String(maxmemory), '--maxmemory-policy', policy]);
  const limiter = createLimiter({
    policies: [VICTIM],
    store: new RedisStore({ client }),
    timeoutMs: 5000,
    denyCache: false,
  });
  return { client, limiter };
}

describe('Redis memory', () => {
  it('allkeys-lru: a flood of new identities evicts a drained victim, who gets a full burst again', async () => {
    const { client, limiter } = await smallRedis('allkeys-lru');
    expect(await admittedOf(limiter, 'victim', 25)).toBe(20);
    // Redis's LRU clock ticks once a second and cannot be injected: a flood that runs within one
    // tick leaves the victim as recent as every flood key, and eviction picks among them at random.
    // Let one tick pass so the victim is the least recently used key, as in production.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const outcomes = await flood(limiter, FLOOD_IDENTITIES);
    const evicted = await info(client, 'evicted_keys');
    // Every flood identity was admitted: Redis made room by evicting, never refused a write.
    expect(outcomes.get('allowed')).toBe(FLOOD_IDENTITIES);
    expect(evicted).toBeGreaterThan(FLOOD_IDENTITIES / 2);
    // The victim was the least recently used key: forgotten, so its burst is admitted again.
    const overshoot = await admittedOf(limiter, 'victim', 25);
    expect(overshoot).toBe(20);
    console.log(
      `allkeys-lru: ${evicted} of ${FLOOD_IDENTITIES} flood keys evicted, drained victim admitted ${overshoot} more`,
    );
  }, 60_000);

  it('noeviction: once full, every check is unavailable, a drained identity too', async () => {
    const { limiter } = await smallRedis('noeviction');
    expect(await admittedOf(limiter, 'victim', 25)).toBe(20);
    const outcomes = await flood(limiter, FLOOD_IDENTITIES);
    const unavailable = outcomes.get('unavailable') ?? 0;
    // Redis refused the writes past maxmemory: those checks were unavailable (503 when closed).
    expect(unavailable).toBeGreaterThan(FLOOD_IDENTITIES / 4);
    expect(outcomes.get('over_limit') ?? 0).toBe(0);
    // Redis refuses a script that may write while over maxmemory, before it runs: the victim's
    // check is unavailable too, not over_limit. Its fail mode decides (closed: 503; open: admitted).
    const victim = await limiter.check({ identity: 'victim' });
    console.log(
      `noeviction: ${unavailable} of ${FLOOD_IDENTITIES} flood checks unavailable; drained victim: ${victim.outcome}`,
    );
    expect(victim.outcome).toBe('unavailable');
    expect(victim.allowed).toBe(false);
  }, 60_000);

  it('costs the documented bytes per key, per algorithm (MEMORY USAGE)', async () => {
    const client = await redisWith([]);
    const policies: PolicyInput[] = [
      { name: 'p1', algorithm: 'token-bucket', burst: 100, rate: '100/m' },
      { name: 'p1', algorithm: 'gcra', burst: 100, rate: '100/m' },
      { name: 'p1', algorithm: 'sliding-window', limit: 100, window: '1m' },
      { name: 'p1', algorithm: 'fixed-window', limit: 100, window: '1m' },
      { name: 'p1', algorithm: 'sliding-log', limit: 100, window: '1m' },
    ];
    const bytes: Record<string, number> = {};
    for (const policy of policies) {
      await client.flushall();
      const limiter = createLimiter({
        policies: [policy],
        store: new RedisStore({ client }),
        prefix: 'sluice',
      });
      await limiter.check({ identity: 'user-00042' });
      const [key] = await client.keys('*');
      bytes[policy.algorithm as string] = Number(await client.memory('USAGE', key as string));
    }
    // What Redis as a whole grows by per key (dictionary entries, the TTL entry, allocator
    // rounding): the number to size maxmemory with.
    // A fresh server: nothing else in it.
    const fresh = await redisWith([]);
    await fresh.ping();
    const before = await info(fresh, 'used_memory');
    const limiter = createLimiter({
      // Slow enough that no key expires while they are counted (a key lives until full again).
      policies: [{ name: 'p1', algorithm: 'token-bucket', burst: 100, rate: '100/h' }],
      store: new RedisStore({ client: fresh }),
      timeoutMs: 5000,
      breaker: false,
    });
    for (let start = 0; start < 10_000; start += 1000) {
      await Promise.all(
        Array.from({ length: 1000 }, (_, i) =>
          limiter.check({ identity: `user-${String(start + i).padStart(5, '0')}` }),
        ),
      );
    }
    expect(await fresh.dbsize()).toBe(10_000);
    const usedPerKey = ((await info(fresh, 'used_memory')) - before) / 10_000;
    console.log(
      `MEMORY USAGE per key: ${JSON.stringify(bytes)}; used_memory per token-bucket key ${usedPerKey.toFixed(0)} B`,
    );
    // docs/failure-modes.md: about 190 B (the hash tables double at powers of two, so it moves).
    expect(usedPerKey).toBeGreaterThan(bytes['token-bucket']!);
    expect(usedPerKey).toBeLessThanOrEqual(224);
    // The figures in docs/failure-modes.md (a 23-character key; Redis rounds allocations, so a
    // longer prefix or identity moves them in steps of 8-16 B).
    expect(bytes).toEqual({
      'token-bucket': 104,
      gcra: 104,
      'sliding-window': 104,
      'fixed-window': 104,
      'sliding-log': 136,
    });
  }, 30_000);

  it('warns once, with a code, for an allkeys-* policy, and says nothing for noeviction', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const lru = await redisWith(['--maxmemory-policy', 'allkeys-lru']);
    const store = new RedisStore({ client: lru });
    await store.decide([], 'consume').catch(() => {});
    expect(await store.maxmemoryPolicies()).toEqual(['allkeys-lru']);
    expect(await new RedisStore({ client: lru }).maxmemoryPolicies()).toEqual(['allkeys-lru']);
    expect(warn).toHaveBeenCalledTimes(1);
    expect(String(warn.mock.calls[0]?.[0])).toMatch(
      /^\[SLUICE_REDIS_ALLKEYS_EVICTION\] Redis maxmemory-policy is allkeys-lru/,
    );
    resetWarnings();
    warn.mockClear();
    const noeviction = await redisWith(['--maxmemory-policy', 'noeviction']);
    expect(await new RedisStore({ client: noeviction }).maxmemoryPolicies()).toEqual(['noeviction']);
    expect(warn).not.toHaveBeenCalled();
  }, 30_000);

  it('says nothing when CONFIG is not allowed, and still decides', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const client = await redisWith(['--maxmemory-policy', 'allkeys-lru', '--rename-command', 'CONFIG', '""']);
    const store = new RedisStore({ client });
    expect(await store.maxmemoryPolicies()).toEqual([]);
    const limiter = createLimiter({ policies: [VICTIM], store, timeoutMs: 5000 });
    expect((await limiter.check({ identity: 'a' })).allowed).toBe(true);
    expect(warn).not.toHaveBeenCalled();
  }, 30_000);
});
