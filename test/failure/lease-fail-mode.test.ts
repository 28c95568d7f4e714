/**
 * Leases while Redis cannot decide, with the network blackholed (the fault proxy) and with Redis
 * stopped: 4 instances each holding a lease keep admitting from it until it is spent or its TTL
 * passes, then fail as `lease.failModeAfter` says. The extra admissions during the outage are
 * measured against the bound: at most the units the leases held (instances x units), all of them
 * taken from Redis before the outage, so the fleet never admits more than the policy allows.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLimiter, createRedisStore, type Decision, type PolicyInput } from '../cluster/core.js';
import { type FaultProxy, startFaultProxy } from '../support/fault-proxy.js';
import { type RedisProcess, startRedis } from '../support/redis-server.js';

const INSTANCES = 4;
const UNITS = 10;
/**
 * The leases' TTL: longer than the outage phase takes (5 deadlines and 14 short sleeps per
 * instance: 0.6 s on a quiet machine, up to 1.4 s under 6 busy loops), with room for a loaded one.
 */
const TTL_MS = 5000;
const TIMEOUT_MS = 100;
/** Real time a new connection may take to come up and run its first script on a loaded machine. */
const CONNECTED_WITHIN_MS = 10_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Waits until each limiter's store has decided a check of an identity of its own (not the one under
 * test), up to `CONNECTED_WITHIN_MS`: the connection's handshake and the decide script's first
 * load then lie behind, and each healthy check after is one round trip within `TIMEOUT_MS`.
 * A first check made on a cold connection raced its handshake against the 100 ms deadline.
 */
async function connected(limiters: readonly ReturnType<typeof createLimiter>[]): Promise<void> {
  const deadlineMs = performance.now() + CONNECTED_WITHIN_MS;
  for (const limiter of limiters) {
    while ((await limiter.check({ identity: 'warm-up' })).source !== 'store') {
      if (performance.now() > deadlineMs)
        throw new Error(`no store decision within ${CONNECTED_WITHIN_MS} ms`);
      await sleep(10);
    }
  }
}

/** The stores made by a test, closed after it. */
const stores: ReturnType<typeof createRedisStore>[] = [];
afterAll(async () => {
  await Promise.all(stores.map((s) => s.close()));
});

/** 4 instances on `url`, one store (connection) and limiter each. */
function fleet(url: string, policies: PolicyInput[], prefix: string) {
  return Array.from({ length: INSTANCES }, () => {
    const store = createRedisStore(url);
    stores.push(store);
    return createLimiter({ policies, prefix, store, timeoutMs: TIMEOUT_MS, denyCache: false });
  });
}

const leased = (lease: PolicyInput['lease'], failMode: PolicyInput['failMode'] = 'lease'): PolicyInput => ({
  name: 'leased',
  burst: 1000,
  rate: '1000/1h',
  failMode,
  lease,
});

/** Every instance checks `count` times, `everyMs` apart: the decisions, by instance. */
async function checks(limiters: ReturnType<typeof fleet>, count: number, everyMs: number) {
  return Promise.all(
    limiters.map(async (limiter) => {
      const out: Decision[] = [];
      for (let i = 0; i < count; i++) {
        out.push(await limiter.check({ identity: 'tenant' }));
        await sleep(everyMs);
      }
      return out;
    }),
  );
}

interface Outage {
  readonly name: string;
  /** Starts the outage; returns the Redis URL the instances use. */
  setUp(): Promise<string>;
  begin(): Promise<void>;
  end(): Promise<void>;
}

let redis: RedisProcess | undefined;
let proxy: FaultProxy | undefined;

const OUTAGES: readonly Outage[] = [
  {
    name: 'the network blackholed',
    async setUp() {
      redis = await startRedis();
      proxy = await startFaultProxy({ port: redis.port });
      return proxy.url;
    },
    async begin() {
      proxy?.setMode('blackhole');
    },
    async end() {
      await proxy?.close();
      await redis?.stop();
    },
  },
  {
    name: 'Redis stopped',
    async setUp() {
      redis = await startRedis();
      return redis.url;
    },
    async begin() {
      await redis?.stop();
    },
    async end() {},
  },
];

describe.each(OUTAGES)('leases with $name', (outage) => {
  const figures: string[] = [];
  let url: string;
  beforeAll(async () => {
    url = await outage.setUp();
  });
  afterAll(async () => {
    await outage.end();
    console.log(`leases with ${outage.name}:\n${figures.join('\n')}`);
  });

  it("failMode 'lease': each instance spends its lease, then fails as failModeAfter says; at most instances x units more admitted", async () => {
    const limiters = fleet(url, [leased({ units: UNITS, ttlMs: TTL_MS })], `lf-${outage.name.length}a`);
    const [opensAfter] = fleet(
      url,
      [leased({ units: UNITS, ttlMs: 300, failModeAfter: 'open' })],
      `lf-${outage.name.length}b`,
    );
    await connected([...limiters, opensAfter!]);
    // Healthy: each instance checks the cold key exactly, then takes a lease of 10 and spends 1.
    for (const limiter of [...limiters, opensAfter!]) {
      expect((await limiter.check({ identity: 'tenant' })).source).toBe('store');
      expect((await limiter.check({ identity: 'tenant' })).source).toBe('store');
    }
    await outage.begin();
    const started = performance.now();
    const during = await checks(limiters, 14, 5);
    const elapsedMs = performance.now() - started;
    const all = during.flat();
    const admitted = all.filter((d) => d.allowed);
    figures.push(
      `  lease then closed: ${admitted.length} admitted during the outage (bound ${INSTANCES * UNITS}), ` +
        `${all.length - admitted.length} unavailable, ${Math.round(elapsedMs)} ms`,
    );
    expect(elapsedMs).toBeLessThan(TTL_MS);
    // Each instance: the 9 units its lease held, from the lease; then unavailable, 503.
    for (const decisions of during) {
      expect(decisions.slice(0, 9).every((d) => d.allowed && d.source === 'lease')).toBe(true);
      expect(decisions.slice(9).every((d) => !d.allowed && d.outcome === 'unavailable')).toBe(true);
    }
    expect(admitted.length).toBe(INSTANCES * (UNITS - 1));
    expect(all.some((d) => d.outcome === 'over_limit')).toBe(false);
    // The other fleet's lease (TTL 300 ms) is over: it fails open.
    await sleep(Math.max(0, 350 - (performance.now() - started)));
    expect(await opensAfter!.check({ identity: 'tenant' })).toMatchObject({
      allowed: true,
      outcome: 'unavailable',
      source: 'fail-open',
    });
  });
});

describe('a leased policy beside an unleased one while the network is blackholed', () => {
  let server: RedisProcess;
  let faults: FaultProxy;
  beforeAll(async () => {
    server = await startRedis();
    faults = await startFaultProxy({ port: server.port });
  });
  afterAll(async () => {
    await faults?.close();
    await server?.stop();
  });

  it("failMode 'lease' answers from the lease, 'closed' denies at once and stops spending its lease", async () => {
    const audit: PolicyInput = { name: 'audit', limit: 1000, window: '1h', failMode: 'open' };
    const [withLease] = fleet(faults.url, [leased({ units: UNITS, ttlMs: '1m' }), audit], 'lf-mixed-lease');
    const [closed] = fleet(
      faults.url,
      [leased({ units: UNITS, ttlMs: '1m' }, 'closed'), audit],
      'lf-mixed-closed',
    );
    await connected([withLease!, closed!]);
    // The cold key's first check is exact; the second takes the lease.
    for (const limiter of [withLease!, closed!]) {
      expect((await limiter.check({ identity: 'tenant' })).allowed).toBe(true);
      expect((await limiter.check({ identity: 'tenant' })).allowed).toBe(true);
    }
    faults.setMode('blackhole');
    expect(await withLease!.check({ identity: 'tenant' })).toMatchObject({
      allowed: true,
      outcome: 'unavailable',
      source: 'lease',
    });
    expect(await closed!.check({ identity: 'tenant' })).toMatchObject({
      allowed: false,
      outcome: 'unavailable',
      source: 'fail-closed',
    });
    // The store failed: a closed leased policy alone no longer spends its lease either.
    expect(await closed!.check({ identity: 'tenant', policies: ['leased'] })).toMatchObject({
      allowed: false,
      outcome: 'unavailable',
    });
    faults.setMode('pass');
  });
});
