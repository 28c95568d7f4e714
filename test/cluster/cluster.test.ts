/**
 * Sluice on a real 3-primary + 3-replica Redis Cluster: every algorithm and the multi-policy
 * check hold their limit under contention from several Cluster connections, decisions equal
 * those of a single Redis step for step, no call ever meets CROSSSLOT, keys spread over the
 * primaries by identity with one identity's policies in one slot, and SCRIPT FLUSH on the
 * primaries under load leaves no check undecided.
 */

import fc from 'fast-check';
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisCluster, startRedisCluster } from '../support/redis-cluster.js';
import { type RedisProcess, startRedis } from '../support/redis-server.js';
import { connectCluster } from './connect.js';
import {
  type Algorithm,
  banKeyOf,
  createLimiter,
  type Decision,
  type EvalClient,
  identityTag,
  type PolicyInput,
  RedisStore,
} from './core.js';
import { keySlot, ownerOf } from './key-slot.js';

const ALGORITHMS: readonly Algorithm[] = [
  'token-bucket',
  'gcra',
  'sliding-window',
  'fixed-window',
  'sliding-log',
];
const CONNECTIONS = 4;

let cluster: RedisCluster;
const clients: Cluster[] = [];
/** Every error any Cluster call returned, by message. */
const errors: string[] = [];
let runId = 0;
const prefix = () => `c${process.pid}x${++runId}`;

/** An EvalClient over one Cluster connection that records every error it passes on. */
function recording(client: Cluster | Redis): EvalClient {
  const record = (error: unknown) => {
    errors.push(error instanceof Error ? error.message : String(error));
    throw error;
  };
  return {
    evalsha: (sha1, numKeys, ...args) => client.evalsha(sha1, numKeys, ...args).catch(record),
    eval: (script, numKeys, ...args) => client.eval(script, numKeys, ...args).catch(record),
  };
}

/** Seconds to the next whole `windowSeconds` boundary of Redis time. */
async function secondsToBoundary(windowSeconds: number): Promise<number> {
  const [seconds] = (await clients[0]!.call('TIME')) as [string, string];
  return windowSeconds - (Number(seconds) % windowSeconds);
}

/** Fixed windows are aligned to Redis time; keep a burst clear of a boundary. */
async function clearOfWindowBoundary(windowSeconds: number, marginSeconds = 15): Promise<void> {
  const left = await secondsToBoundary(windowSeconds);
  if (left < marginSeconds) await new Promise((r) => setTimeout(r, (left + 1) * 1000));
}

beforeAll(async () => {
  cluster = await startRedisCluster();
  console.log(`[cluster] 3 primaries + 3 replicas ready in ${cluster.startupMs} ms`);
  for (let i = 0; i < CONNECTIONS; i++) clients.push(await connectCluster(cluster));
});

afterAll(async () => {
  for (const client of clients) client.disconnect();
  await cluster?.stop();
});

describe('slot arithmetic', () => {
  it('the local slot computation agrees with CLUSTER KEYSLOT, hash tags included', async () => {
    const keys = [
      'plain',
      'sluice:{tenant-1}:burst',
      'sluice:{tenant-1}:payments',
      '{}x',
      'a{b}c{d}',
      'k{}{z}',
    ];
    for (let i = 0; i < 40; i++) keys.push(`p:{id-${i}-${Math.random()}}:policy`);
    for (const key of keys) {
      expect(keySlot(key), key).toBe(Number(await clients[0]!.cluster('KEYSLOT', key)));
    }
  });
});

describe.each(ALGORITHMS)('%s under contention on the Cluster', (algorithm) => {
  it(`2,000 concurrent one-unit checks over ${CONNECTIONS} Cluster connections at one key of limit 100 admit exactly 100`, async () => {
    if (algorithm === 'fixed-window') await clearOfWindowBoundary(3600);
    const p = prefix();
    const policies: PolicyInput[] = [{ name: 'contended', algorithm, limit: 100, window: '1h' }];
    const limiters = clients.map((client) =>
      createLimiter({
        policies,
        prefix: p,
        store: new RedisStore({ client: recording(client) }),
        timeoutMs: 20_000,
        breaker: false,
        denyCache: false,
      }),
    );
    const decisions = await Promise.all(
      Array.from({ length: 2000 }, (_, i) => limiters[i % CONNECTIONS]!.check({ identity: 'hot-tenant' })),
    );
    const allowed = decisions.filter((d) => d.allowed);
    const outcomes = count(decisions.map((d) => d.outcome));
    expect(outcomes).toEqual({ allowed: 100, over_limit: 1900 });
    expect(decisions.every((d) => d.source === 'store')).toBe(true);
    // Each admitted request saw a distinct count: the read-decide-write happened atomically.
    expect(allowed.map((d) => d.remaining).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 100 }, (_, i) => i),
    );
    for (const d of decisions) {
      expect(d.remaining).toBeGreaterThanOrEqual(0);
      expect(d.remaining).toBeLessThanOrEqual(100);
      if (!d.allowed) expect(d.retryAfterMs).toBeGreaterThan(0);
    }
    // A different identity on the same policy does not share state.
    const fresh = await limiters[1]!.check({ identity: 'other-tenant' });
    expect(fresh.allowed).toBe(true);
    expect(fresh.remaining).toBe(99);
    // Denials consumed nothing: still exactly 0 left, not negative.
    const after = await limiters[2]!.peek({ identity: 'hot-tenant' });
    expect(after.remaining).toBe(0);
  });
});

describe('multi-policy check on the Cluster', () => {
  it('five policies (one per algorithm) in one script call: all or nothing under 2,000 concurrent checks', async () => {
    await clearOfWindowBoundary(3600);
    const p = prefix();
    const limits = [100, 90, 80, 70, 60];
    const policies: PolicyInput[] = ALGORITHMS.map((algorithm, i) => ({
      name: `p-${algorithm}`,
      algorithm,
      limit: limits[i]!,
      window: '1h',
    }));
    const limiters = clients.map((client) =>
      createLimiter({
        policies,
        prefix: p,
        store: new RedisStore({ client: recording(client) }),
        timeoutMs: 20_000,
        breaker: false,
        denyCache: false,
      }),
    );
    const decisions = await Promise.all(
      Array.from({ length: 2000 }, (_, i) => limiters[i % CONNECTIONS]!.check({ identity: 'multi-tenant' })),
    );
    expect(count(decisions.map((d) => d.outcome))).toEqual({ allowed: 60, over_limit: 1940 });
    for (const d of decisions) expect(d.results).toHaveLength(5);
    // The denying policy is the 60-limit one; the others were charged only for the 60 admitted.
    const after = await limiters[0]!.peek({ identity: 'multi-tenant' });
    expect(after.results.map((r) => [r.policy, r.remaining])).toEqual(
      ALGORITHMS.map((algorithm, i) => [`p-${algorithm}`, limits[i]! - 60]),
    );
  });
});

describe('the Cluster decides exactly as a single Redis', () => {
  let single: RedisProcess;
  let singleClient: Redis;
  beforeAll(async () => {
    single = await startRedis();
    singleClient = new Redis({ host: '127.0.0.1', port: single.port });
  });
  afterAll(async () => {
    singleClient?.disconnect();
    await single?.stop();
  });

  it('random sequences of multi-policy checks with an explicit clock give identical decisions', async () => {
    const policies: PolicyInput[] = [
      { name: 'tb', algorithm: 'token-bucket', limit: 10, window: '10s' },
      { name: 'gcra', algorithm: 'gcra', limit: 8, window: '8s', burst: 4 },
      { name: 'sw', algorithm: 'sliding-window', limit: 12, window: '20s' },
      { name: 'fw', algorithm: 'fixed-window', limit: 9, window: '15s' },
      { name: 'log', algorithm: 'sliding-log', limit: 7, window: '12s' },
    ];
    const names = policies.map((p) => p.name);
    const step = fc.record({
      identity: fc.constantFrom('a', 'b', 'c:{x}', '{d}'),
      policies: fc.subarray(names, { minLength: 1 }),
      cost: fc.integer({ min: 1, max: 4 }),
      advanceMs: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 4000 })),
      peek: fc.boolean(),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 5, maxLength: 25 }), async (steps) => {
        let nowMs = 1_800_000_000_000;
        const clock = () => nowMs;
        const p = prefix();
        const make = (client: Cluster | Redis) =>
          createLimiter({
            policies,
            prefix: p,
            store: new RedisStore({ client: recording(client), clock }),
            clock,
            timeoutMs: 10_000,
            breaker: false,
            denyCache: false,
          });
        const onCluster = make(clients[runId % CONNECTIONS]!);
        const onSingle = make(singleClient);
        for (const s of steps) {
          nowMs += s.advanceMs;
          const descriptor = { identity: s.identity, policies: s.policies, cost: s.cost };
          const [a, b] = s.peek
            ? await Promise.all([onCluster.peek(descriptor), onSingle.peek(descriptor)])
            : await Promise.all([onCluster.check(descriptor), onSingle.check(descriptor)]);
          expect(a.source).toBe('store');
          expect(comparable(a)).toEqual(comparable(b));
        }
      }),
      { numRuns: 15 },
    );
  });
});

describe('keys spread over the primaries by identity', () => {
  it('10,000 identities x 2 policies: each primary holds 25-42 % of identities; one identity = one slot', async () => {
    const p = prefix();
    const limiter = createLimiter({
      policies: [
        { name: 'burst', algorithm: 'token-bucket', limit: 20, window: '1h' },
        { name: 'daily', algorithm: 'sliding-window', limit: 1000, window: '1d' },
      ],
      prefix: p,
      store: new RedisStore({ client: recording(clients[0]!) }),
      timeoutMs: 20_000,
      breaker: false,
    });
    const identities = Array.from({ length: 10_000 }, (_, i) => `user-${i}@example.test`);
    for (let i = 0; i < identities.length; i += 500) {
      const batch = await Promise.all(
        identities.slice(i, i + 500).map((identity) => limiter.check({ identity })),
      );
      expect(batch.every((d) => d.allowed && d.source === 'store')).toBe(true);
    }

    const topology = await cluster.topology();
    expect(topology.primaries).toHaveLength(3);
    const tagsByPrimary = new Map<number, Map<string, string[]>>();
    for (const primary of topology.primaries) {
      const node = new Redis({ host: '127.0.0.1', port: primary.port });
      const tags = new Map<string, string[]>();
      let cursor = '0';
      do {
        const [next, keys] = await node.scan(cursor, 'MATCH', `${p}:*`, 'COUNT', 2000);
        cursor = next;
        for (const key of keys) {
          const tag = key.slice(key.indexOf('{'), key.indexOf('}') + 1);
          tags.set(tag, [...(tags.get(tag) ?? []), key]);
          // The key lives on the primary that owns its slot.
          expect(ownerOf(keySlot(key), topology.primaries)).toBe(primary.port);
        }
      } while (cursor !== '0');
      node.disconnect();
      tagsByPrimary.set(primary.port, tags);
    }

    const shares = [...tagsByPrimary.entries()].map(([port, tags]) => ({ port, identities: tags.size }));
    const total = shares.reduce((sum, s) => sum + s.identities, 0);
    console.log(
      `[cluster] identities per primary: ${shares.map((s) => `${s.port}: ${s.identities} (${((100 * s.identities) / total).toFixed(1)} %)`).join(', ')}`,
    );
    // Every identity found exactly once, on exactly one primary, with both policies' keys there.
    expect(total).toBe(10_000);
    for (const s of shares) {
      expect(s.identities / total).toBeGreaterThanOrEqual(0.25);
      expect(s.identities / total).toBeLessThanOrEqual(0.42);
    }
    for (const tags of tagsByPrimary.values()) {
      for (const keys of tags.values()) {
        expect(keys).toHaveLength(2);
        expect(new Set(keys.map(keySlot)).size).toBe(1);
      }
    }
    // And the slot is the identity's tag, as the key module builds it.
    const sample = identities[1234]!;
    const tag = identityTag(p, sample);
    const owner = ownerOf(keySlot(tag), topology.primaries)!;
    expect(tagsByPrimary.get(owner)!.has(tag.slice(tag.indexOf('{')))).toBe(true);
  });
});

describe('NOSCRIPT recovery on the Cluster', () => {
  it('SCRIPT FLUSH on the primaries under load: every check is still decided, each identity admits exactly its limit', async () => {
    const p = prefix();
    const IDENTITIES = 48;
    const LIMIT = 10;
    const WAVES = 8;
    const PER_WAVE = 250;
    const policies: PolicyInput[] = [
      { name: 'n-log', algorithm: 'sliding-log', limit: LIMIT, window: '1h' },
      { name: 'n-tb', algorithm: 'token-bucket', burst: 1000, rate: '1/h' },
    ];
    const limiters = clients.map((client) =>
      createLimiter({
        policies,
        prefix: p,
        store: new RedisStore({ client: recording(client) }),
        timeoutMs: 20_000,
      }),
    );
    const { primaries } = await cluster.topology();
    const admins = primaries.map((primary) => new Redis({ host: '127.0.0.1', port: primary.port }));
    const flushAll = () => Promise.all(admins.map((admin) => admin.script('FLUSH')));
    const noscriptBefore = errors.filter((m) => m.startsWith('NOSCRIPT')).length;
    const decisions: Decision[] = [];
    const identities: string[] = [];
    try {
      let flushedMidWave: Promise<unknown> | undefined;
      for (let wave = 0; wave < WAVES; wave++) {
        // Flush between waves, and during one: the checks of that wave are in flight.
        if (wave === 2 || wave === 4) await flushAll();
        const checks = Array.from({ length: PER_WAVE }, (_, i) => {
          const identity = `noscript-${(wave * PER_WAVE + i) % IDENTITIES}`;
          identities.push(identity);
          return limiters[i % limiters.length]!.check({ identity });
        });
        if (wave === 6) flushedMidWave = admins[wave % admins.length]!.script('FLUSH');
        decisions.push(...(await Promise.all(checks)));
        await flushedMidWave;
      }
    } finally {
      for (const admin of admins) admin.disconnect();
    }
    expect(count(decisions.map((d) => d.outcome))).toEqual({
      allowed: IDENTITIES * LIMIT,
      over_limit: WAVES * PER_WAVE - IDENTITIES * LIMIT,
    });
    const admittedBy = new Map<string, number>();
    for (const [i, d] of decisions.entries()) {
      if (d.allowed) admittedBy.set(identities[i]!, (admittedBy.get(identities[i]!) ?? 0) + 1);
    }
    expect(new Set(admittedBy.values())).toEqual(new Set([LIMIT]));
    expect(admittedBy.size).toBe(IDENTITIES);
    // The flushes were met (NOSCRIPT, then EVAL) on more than one primary's connections.
    expect(errors.filter((m) => m.startsWith('NOSCRIPT')).length).toBeGreaterThanOrEqual(noscriptBefore + 2);
  });
});

describe('idempotent checks on the Cluster', () => {
  it('a retried multi-policy check with the same requestId replays the first decision; the record shares the slot', async () => {
    const p = prefix();
    const policies: PolicyInput[] = ALGORITHMS.map((algorithm) => ({
      name: `i-${algorithm}`,
      algorithm,
      limit: 10,
      window: '1h',
    }));
    const limiters = clients.map((client) =>
      createLimiter({
        policies,
        prefix: p,
        store: new RedisStore({ client: recording(client) }),
        timeoutMs: 20_000,
      }),
    );
    // The same request retried from every connection at once: charged once.
    const replays = await Promise.all(
      limiters.map((l) => l.check({ identity: 'retrying', requestId: 'req-42' })),
    );
    for (const d of replays) {
      expect(d.allowed).toBe(true);
      expect(d.results.map((r) => r.remaining)).toEqual(Array(5).fill(9));
    }
    const after = await limiters[0]!.peek({ identity: 'retrying' });
    expect(after.results.map((r) => r.remaining)).toEqual(Array(5).fill(9));
    expect((await limiters[1]!.check({ identity: 'retrying', requestId: 'req-43' })).remaining).toBe(8);
  });
});

describe('the hot-key limit', () => {
  it('one identity is one slot on one primary: measured decisions per second, with and without the deny cache', async () => {
    const TURN = 500;
    const DECISIONS = 4000;
    let scriptCalls = 0;
    const counting = (client: EvalClient): EvalClient => ({
      evalsha: (...args) => {
        scriptCalls++;
        return client.evalsha(...args);
      },
      eval: (...args) => client.eval(...args),
    });
    const rate = async (
      identities: (i: number) => string,
      denyCache: boolean,
      limit: number,
      n = DECISIONS,
    ) => {
      const p = prefix();
      scriptCalls = 0;
      const limiters = clients.map((client) =>
        createLimiter({
          policies: [{ name: 'hot', algorithm: 'token-bucket', limit, window: '1h' }],
          prefix: p,
          // A batch per connection per turn, however long a loaded machine takes to issue the
          // turn (the 2 ms default of maxBatchWaitMs would cut it into more calls).
          store: new RedisStore({ client: counting(recording(client)), maxBatchWaitMs: 60_000 }),
          timeoutMs: 20_000,
          breaker: false,
          // A maximum age longer than the run: the count below measures what the cache saves,
          // not how often it re-asks Redis (once per maxAgeMs, 1 s by default) on a slow machine.
          denyCache: denyCache ? { maxAgeMs: 600_000 } : false,
        }),
      );
      const t0 = performance.now();
      const outcomes: Record<string, number> = {};
      for (let i = 0; i < n; i += TURN) {
        const decisions = await Promise.all(
          Array.from({ length: TURN }, (_, j) =>
            limiters[(i + j) % CONNECTIONS]!.check({ identity: identities(i + j) }),
          ),
        );
        for (const d of decisions) outcomes[d.outcome] = (outcomes[d.outcome] ?? 0) + 1;
      }
      const perSecond = Math.round(n / ((performance.now() - t0) / 1000));
      return { perSecond, scriptCalls, admitted: outcomes.allowed ?? 0, outcomes };
    };
    await rate((i) => `warm-${i}`, false, 1_000_000, 1000);
    const hot = await rate(() => 'hot', false, 1_000_000);
    const spread = await rate((i) => `spread-${i}`, false, 1_000_000);
    const hotDenied = await rate(() => 'hot-denied', false, 10);
    const hotDeniedCached = await rate(() => 'hot-denied-cached', true, 10);
    console.log(
      `[cluster] decisions/s over ${CONNECTIONS} connections: one hot key ${hot.perSecond}, 4,000 keys over 3 primaries ${spread.perSecond}; a hot key over its limit: ${hotDenied.perSecond} without, ${hotDeniedCached.perSecond} with the deny cache (script calls ${hotDenied.scriptCalls} and ${hotDeniedCached.scriptCalls})`,
    );
    for (const r of [hot, spread, hotDenied, hotDeniedCached]) expect(r.perSecond).toBeGreaterThan(200);
    // Counted against the limit: every decision is allowed or over_limit (never unavailable),
    // and exactly the limit is admitted. A limit of 1,000,000 admits all 4,000; a limit of 10
    // per hour admits its 10 (a unit refills every 360 s, far longer than the run) and no more,
    // with or without the deny cache, whatever the contention across the connections.
    for (const r of [hot, spread]) expect(r.outcomes).toEqual({ allowed: DECISIONS });
    for (const r of [hotDenied, hotDeniedCached]) {
      expect(r.outcomes).toEqual({ allowed: 10, over_limit: DECISIONS - 10 });
    }
    // Without the cache every turn of checks reaches Redis; with it, denials learned in the first
    // turn are answered in process, so later turns send nothing (counted, not timed: a batched
    // Redis denial can be as fast as the cache on a quiet machine).
    const turns = DECISIONS / TURN;
    expect(hotDenied.scriptCalls).toBeGreaterThanOrEqual(turns * CONNECTIONS);
    expect(hotDeniedCached.scriptCalls).toBeLessThanOrEqual(2 * CONNECTIONS);
  });
});

describe('bans on the Cluster', () => {
  it("a ban key lives in its identity's slot, is decided in the same call as the policies, and holds on every connection", async () => {
    const p = prefix();
    const policies: PolicyInput[] = [
      { name: 'wide', burst: 1000, rate: '1/h' },
      { name: 'strict', algorithm: 'fixed-window', limit: 2, window: '1m', ban: { blockMs: '10m' } },
    ];
    await clearOfWindowBoundary(60);
    const limiters = clients.map((client) =>
      createLimiter({
        policies,
        prefix: p,
        store: new RedisStore({ client: recording(client) }),
        timeoutMs: 20_000,
        breaker: false,
        denyCache: false,
      }),
    );
    const identities = Array.from({ length: 12 }, (_, i) => `banned-${i}`);
    for (const identity of identities) {
      expect((await limiters[0]!.check({ identity })).allowed).toBe(true);
      expect((await limiters[1]!.check({ identity })).allowed).toBe(true);
      const denied = await limiters[2]!.check({ identity });
      expect(denied.results.find((r) => r.policy === 'strict')).toMatchObject({
        banned: true,
        retryAfterMs: 600_000,
      });
      // Every connection sees the ban; nothing is charged while it lasts.
      const seen = await Promise.all(limiters.map((limiter) => limiter.check({ identity })));
      for (const d of seen) {
        expect(d.allowed).toBe(false);
        expect(d.results.find((r) => r.policy === 'strict')?.banned).toBe(true);
        expect(d.results.find((r) => r.policy === 'wide')?.remaining).toBe(998);
      }
      const stateKey = `${identityTag(p, identity)}:strict`;
      const banKey = banKeyOf(stateKey);
      expect(keySlot(banKey)).toBe(keySlot(stateKey));
      expect(Number(await clients[0]!.cluster('KEYSLOT', banKey))).toBe(keySlot(stateKey));
      const ttl = await clients[3]!.pttl(banKey);
      expect(ttl).toBeGreaterThan(500_000);
      expect(ttl).toBeLessThanOrEqual(600_001);
    }
    // The identities spread over more than one primary, each with its ban beside its state.
    const { primaries } = await cluster.topology();
    const owners = new Set(
      identities.map((identity) => ownerOf(keySlot(identityTag(p, identity)), primaries)),
    );
    expect(owners.size).toBeGreaterThan(1);
  });
});

describe('errors seen by the Cluster connections', () => {
  it('no CROSSSLOT, and nothing but NOSCRIPT (answered by EVAL), in every call of this file', () => {
    expect(errors.filter((m) => m.includes('CROSSSLOT'))).toEqual([]);
    expect(errors.filter((m) => !m.startsWith('NOSCRIPT'))).toEqual([]);
  });
});

function count(values: readonly string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const v of values) out[v] = (out[v] ?? 0) + 1;
  return out;
}

function comparable(d: Decision) {
  return {
    allowed: d.allowed,
    outcome: d.outcome,
    policy: d.policy,
    remaining: d.remaining,
    resetMs: d.resetMs,
    retryAfterMs: d.retryAfterMs,
    results: d.results.map((r) => [r.policy, r.allowed, r.remaining, r.resetMs, r.retryAfterMs]),
  };
}
