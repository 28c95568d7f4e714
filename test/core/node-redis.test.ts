/**
 * node-redis v5 (the `redis` package) as a first-class client, through `fromNodeRedis`: a
 * standalone client and the cluster client against a real redis-server and a real 3+3
 * Redis Cluster. Same decisions as ioredis, NOSCRIPT recovery after SCRIPT FLUSH, every key
 * of one identity in one slot (hash tags), all-or-nothing across policies on Cluster.
 */
import { Redis } from 'ioredis';
import { createClient, createCluster } from 'redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildKey } from '../../packages/core/src/keys/build-keys.js';
import { createLimiter } from '../../packages/core/src/limiter/create-limiter.js';
import { createRedisStore } from '../../packages/core/src/node/ioredis.js';
import { definePolicy } from '../../packages/core/src/policy/define-policy.js';
import { fromNodeRedis } from '../../packages/core/src/redis/node-redis.js';
import { DECIDE_SCRIPTS } from '../../packages/core/src/redis/script.js';
import { nodeRedisTransport } from '../../packages/core/src/redis/transports/node-redis.js';
import { RedisStore } from '../../packages/core/src/stores/redis-store.js';
import type { Algorithm, EvalClient, PolicyInput, StoreEntry } from '../../packages/core/src/types.js';
import { keySlot, ownerOf } from '../cluster/key-slot.js';
import { type RedisCluster, startRedisCluster } from '../support/redis-cluster.js';
import { type RedisProcess, startRedis } from '../support/redis-server.js';

const algorithms: Algorithm[] = ['token-bucket', 'gcra', 'sliding-window', 'fixed-window', 'sliding-log'];

describe('node-redis standalone', () => {
  let redis: RedisProcess;
  let client: ReturnType<typeof createClient>;
  let ioredis: Redis;

  beforeAll(async () => {
    redis = await startRedis();
    client = createClient({ url: `redis://127.0.0.1:${redis.port}` });
    client.on('error', () => {});
    await client.connect();
    ioredis = new Redis(redis.port, '127.0.0.1');
  });

  afterAll(async () => {
    await client?.close();
    ioredis?.disconnect();
    await redis?.stop();
  });

  it('is recognized as standalone (checks of different identities may share a call)', () => {
    expect(fromNodeRedis(client).isCluster).toBe(false);
  });

  it.each(algorithms)('%s: the same decisions as ioredis, with an explicit clock', async (algorithm) => {
    const now = { t: 1_750_000_000_000 };
    const policies: PolicyInput[] = [
      { name: 'p', algorithm, limit: 3, window: '10s' },
      { name: 'q', algorithm: 'token-bucket', burst: 5, rate: '1/s' },
    ];
    const make = (evalClient: EvalClient, prefix: string) =>
      createLimiter({
        policies,
        prefix,
        store: new RedisStore({ client: evalClient, clock: () => now.t }),
        clock: () => now.t,
        timeoutMs: 5000,
        denyCache: false,
      });
    const viaIoredis = make(ioredis, `io-${algorithm}`);
    const viaNodeRedis = make(fromNodeRedis(client), `nr-${algorithm}`);
    for (let i = 0; i < 12; i++) {
      now.t += [0, 700, 2500, 10][i % 4]!;
      const x = await viaIoredis.check({ identity: 'id' });
      const y = await viaNodeRedis.check({ identity: 'id' });
      expect(y.source).toBe('store');
      expect({ ...y.results }).toEqual({ ...x.results });
      expect([y.allowed, y.remaining, y.retryAfterMs]).toEqual([x.allowed, x.remaining, x.retryAfterMs]);
    }
  });

  it('falls back to EVAL after SCRIPT FLUSH and carries on', async () => {
    const limiter = createLimiter({
      policies: [{ name: 'f', algorithm: 'fixed-window', limit: 5, window: '1m' }],
      store: new RedisStore({ client: fromNodeRedis(client) }),
      prefix: 'nr-flush',
      timeoutMs: 5000,
    });
    expect((await limiter.check({ identity: 'x' })).remaining).toBe(4);
    await client.scriptFlush();
    expect(await limiter.check({ identity: 'x' })).toMatchObject({ source: 'store', remaining: 3 });
    expect(await limiter.check({ identity: 'x' })).toMatchObject({ source: 'store', remaining: 2 });
  });

  it('createRedisStore from @sluice/core/node takes a node-redis client as it is', async () => {
    const limiter = createLimiter({
      policies: [{ name: 'c', algorithm: 'fixed-window', limit: 2, window: '1m' }],
      store: createRedisStore(client as never),
      prefix: 'nr-create',
      timeoutMs: 5000,
    });
    expect((await limiter.check({ identity: 'y' })).allowed).toBe(true);
    expect((await limiter.check({ identity: 'y' })).allowed).toBe(true);
    expect(await limiter.check({ identity: 'y' })).toMatchObject({ allowed: false, outcome: 'over_limit' });
  });

  it('a node-redis client passed as the store is told how to wrap it', () => {
    expect(() =>
      createLimiter({ policies: [{ name: 'z', limit: 1, window: '1s' }], store: client as never }),
    ).toThrow('wrap it in new RedisStore({ client: fromNodeRedis(client) })');
  });
});

describe('node-redis cluster client on a 3+3 Redis Cluster', () => {
  let cluster: RedisCluster;
  let client: ReturnType<typeof createCluster>;

  beforeAll(async () => {
    cluster = await startRedisCluster();
    client = createCluster({
      rootNodes: cluster.seeds.map((s) => ({ url: `redis://${s.host}:${s.port}` })),
    });
    client.on('error', () => {});
    await client.connect();
  });

  afterAll(async () => {
    await client?.close();
    await cluster?.stop();
  });

  it('is recognized as a cluster (one slot per script call)', () => {
    expect(fromNodeRedis(client).isCluster).toBe(true);
  });

  it('decides identities spread over every primary, each identity in its own slot', async () => {
    const limiter = createLimiter({
      policies: [
        { name: 'a', algorithm: 'fixed-window', limit: 3, window: '1m' },
        { name: 'b', algorithm: 'token-bucket', burst: 10, rate: '1/s' },
      ],
      store: new RedisStore({ client: fromNodeRedis(client) }),
      prefix: 'nrc',
      timeoutMs: 5000,
    });
    const identities = Array.from({ length: 30 }, (_, i) => `tenant-${i}`);
    const slots = new Set<number>();
    const topology = await cluster.topology();
    const owners = new Set<number>();
    for (const identity of identities) {
      const keys = limiter.policies.map((policy) => keySlot(buildKey('nrc', identity, policy)));
      // Every policy of one identity shares a slot: the hash tag is the identity.
      expect(new Set(keys).size).toBe(1);
      slots.add(keys[0]!);
      const owner = topology.primaries.find((p) =>
        p.slots.some(([lo, hi]) => keys[0]! >= lo && keys[0]! <= hi),
      );
      if (owner !== undefined) owners.add(owner.port);
    }
    expect(owners.size).toBe(3);
    // Concurrently: three admitted per identity, then denied, whatever node holds it.
    const rounds = await Promise.all(
      identities.map(async (identity) => {
        const outcomes: string[] = [];
        for (let i = 0; i < 4; i++) outcomes.push((await limiter.check({ identity })).outcome);
        return outcomes;
      }),
    );
    for (const outcomes of rounds) expect(outcomes).toEqual(['allowed', 'allowed', 'allowed', 'over_limit']);
    expect(slots.size).toBeGreaterThan(20);
  });

  it('is all or nothing across policies: a denial by one charges none', async () => {
    const limiter = createLimiter({
      policies: [
        { name: 'small', algorithm: 'fixed-window', limit: 1, window: '1m' },
        { name: 'large', algorithm: 'fixed-window', limit: 100, window: '1m' },
      ],
      store: new RedisStore({ client: fromNodeRedis(client) }),
      prefix: 'nrc-aon',
      timeoutMs: 5000,
    });
    expect((await limiter.check({ identity: 'u' })).allowed).toBe(true);
    for (let i = 0; i < 5; i++) expect((await limiter.check({ identity: 'u' })).allowed).toBe(false);
    const large = await limiter.peek({ identity: 'u', policies: ['large'] });
    expect(large.results.find((r) => r.policy === 'large')?.remaining).toBe(99);
  });

  /** EVALSHA + EVAL calls every primary ran since the last reset (which this also does). */
  async function scriptCallsOnPrimaries(reset: boolean): Promise<number> {
    let calls = 0;
    for (const master of client.masters) {
      const node = await client.nodeClient(master);
      const info = String(await node.sendCommand(['INFO', 'commandstats']));
      for (const m of info.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)) calls += Number(m[1]);
      if (reset) await node.sendCommand(['CONFIG', 'RESETSTAT']);
    }
    return calls;
  }

  it.each([
    [
      'createRedisStore (node-redis transport)',
      () => createRedisStore(client as never, { maxBatchWaitMs: 60_000 }),
    ],
    [
      'nodeRedisTransport',
      () => new RedisStore({ transport: nodeRedisTransport(client), maxBatchWaitMs: 60_000 }),
    ],
    [
      'fromNodeRedis',
      () =>
        new RedisStore({
          client: fromNodeRedis(client),
          maxBatchWaitMs: 60_000,
          scheduleFlush: setImmediate,
        }),
    ],
  ])('%s: checks of one turn over several slots go in one call per slot', async (name, makeStore) => {
    const policy = definePolicy({ name: 'per-slot', algorithm: 'fixed-window', limit: 2, window: '1m' });
    const prefix = `nrc-batch-${name.replace(/\W+/g, '-')}`;
    const entries = (identity: string): StoreEntry[] => [
      { key: buildKey(prefix, identity, policy), policy, cost: 1 },
    ];
    // Pairs of identities whose hash tags differ but share a slot, and identities of their own slot.
    const bySlot = new Map<number, string>();
    const pairs: string[] = [];
    for (let i = 0; pairs.length < 6; i++) {
      const slot = keySlot(entries(`t${i}`)[0]!.key);
      const other = bySlot.get(slot);
      if (other === undefined) bySlot.set(slot, `t${i}`);
      else {
        pairs.push(other, `t${i}`);
        bySlot.delete(slot);
      }
    }
    const singles = [...bySlot.values()].slice(0, 6);
    const identities = [...pairs, ...singles];
    const slots = new Set(identities.map((id) => keySlot(entries(id)[0]!.key)));
    expect(slots.size).toBe(9);
    const topology = await cluster.topology();
    const owners = new Set([...slots].map((slot) => ownerOf(slot, topology.primaries)));
    expect(owners.size).toBeGreaterThan(1);
    for (const master of client.masters)
      for (const script of DECIDE_SCRIPTS) await (await client.nodeClient(master)).scriptLoad(script.source);
    await scriptCallsOnPrimaries(true);
    const store = makeStore();
    // Every identity three times, in one event-loop turn: allowed, allowed, denied, in issue order.
    const issued = [...identities, ...identities, ...identities];
    const verdicts = await Promise.all(issued.map((id) => store.decide(entries(id), 'consume')));
    expect(verdicts.map((v) => v[0]!.allowed)).toEqual(issued.map((_, i) => i < 2 * identities.length));
    expect(await scriptCallsOnPrimaries(false)).toBe(slots.size);
  });

  it('falls back to EVAL after SCRIPT FLUSH on every primary', async () => {
    const limiter = createLimiter({
      policies: [{ name: 'f', algorithm: 'fixed-window', limit: 5, window: '1m' }],
      store: new RedisStore({ client: fromNodeRedis(client) }),
      prefix: 'nrc-flush',
      timeoutMs: 5000,
    });
    const identities = ['p', 'q', 'r', 's', 't', 'u', 'v', 'w'];
    for (const identity of identities) expect((await limiter.check({ identity })).remaining).toBe(4);
    for (const master of client.masters) {
      const node = await client.nodeClient(master);
      await node.scriptFlush();
    }
    for (const identity of identities) {
      expect(await limiter.check({ identity })).toMatchObject({ source: 'store', remaining: 3 });
    }
  });
});
