/**
 * Bans (`policy.ban`) on MemoryStore and the Redis decide script (both forms), with explicit
 * time: the block after a denial, its escalation, shadow, peek, several policies, the ban key's
 * TTL, a differential test (both stores decide identically) and a property: during its block a
 * ban never admits and never charges.
 */
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisProcess, startRedis } from '../../../../test/support/redis-server.js';
import {
  ALL_ALGORITHMS,
  type Decide,
  type DecideSide,
  expectSameSteps,
  makePolicy,
  memoryDecide,
  memorySide,
  mixedPoliciesArb,
  multiOpSteps,
  multiOpsArb,
  opsArb,
  policyArb,
  startTimeArb,
} from '../algorithms/testing.test-support.js';
import { banKeyOf } from '../keys/build-keys.js';
import type { CompiledBan, CompiledPolicy, StoreEntry, StoreVerdict } from '../types.js';
import { evalDecide, redisDecide } from './script.test-support.js';

let server: RedisProcess;
let redis: Redis;
let run = 0;
const fresh = (): string => `ban${++run}`;

beforeAll(async () => {
  server = await startRedis();
  redis = new Redis(server.port, '127.0.0.1', { maxRetriesPerRequest: 1 });
});

afterAll(async () => {
  redis?.disconnect();
  await server?.stop();
});

/** Time budget of a property run: 60 histories against Redis take seconds, more on a loaded machine. */
const PROPERTY_TIMEOUT_MS = 60_000;

/** A start on a 1 s boundary, so fixed windows of 1 s start with it. */
const T0 = 1_800_000_000_000;

const withBan = (
  policy: CompiledPolicy,
  ban: Partial<CompiledBan> & { blockMs: number },
): CompiledPolicy => ({
  ...policy,
  ban: { violations: 0, violationWindowMs: 0, escalatedBlockMs: ban.blockMs, ...ban },
});

const SIDES: readonly (readonly [string, () => Decide])[] = [
  ['MemoryStore', () => memoryDecide().decide],
  ['Redis script, short form', () => redisDecide(redis, 'short')],
  ['Redis script, full form', () => redisDecide(redis, 'full')],
];

describe.each(SIDES)('bans on %s', (_name, make) => {
  it('a denial bans for blockMs: denied and uncharged while it lasts, Retry-After the rest of it', async () => {
    const d = make();
    const policy = withBan(makePolicy('fixed-window', 2, 10_000, 'api'), { blockMs: 30_000 });
    const entry: StoreEntry = { key: `${fresh()}:{a}:api`, policy, cost: 1 };
    expect((await d([entry], 'consume', T0))[0]?.allowed).toBe(true);
    expect((await d([entry], 'consume', T0 + 1))[0]?.allowed).toBe(true);
    expect(await d([entry], 'consume', T0 + 2)).toEqual([
      { allowed: false, remaining: 0, resetMs: 9998, retryAfterMs: 30_000, banned: true },
    ]);
    // The window is over, so the policy alone would admit: the ban still denies, charging nothing.
    expect(await d([entry], 'consume', T0 + 15_000)).toEqual([
      { allowed: false, remaining: 2, resetMs: 0, retryAfterMs: 15_002, banned: true },
    ]);
    expect(await d([entry], 'peek', T0 + 20_000)).toEqual([
      { allowed: false, remaining: 2, resetMs: 0, retryAfterMs: 10_002, banned: true },
    ]);
    // The block ends at T0 + 30002 exactly.
    expect((await d([entry], 'consume', T0 + 30_001))[0]?.banned).toBe(true);
    expect(await d([entry], 'consume', T0 + 30_002)).toEqual([
      { allowed: true, remaining: 1, resetMs: 9998, retryAfterMs: 0 },
    ]);
  });

  it('escalates: the violations-th denial within the window bans for the longer block', async () => {
    const d = make();
    const policy = withBan(makePolicy('fixed-window', 1, 1000, 'login'), {
      blockMs: 5000,
      violations: 3,
      violationWindowMs: 60_000,
      escalatedBlockMs: 600_000,
    });
    const entry: StoreEntry = { key: `${fresh()}:{a}:login`, policy, cost: 1 };
    let t = T0;
    for (const violation of [1, 2]) {
      expect((await d([entry], 'consume', t))[0]?.allowed, `admit before violation ${violation}`).toBe(true);
      expect(await d([entry], 'consume', t + 1)).toEqual([
        { allowed: false, remaining: 0, resetMs: 999, retryAfterMs: 5000, banned: true },
      ]);
      t += 5001;
      t = Math.ceil(t / 1000) * 1000; // the next window
    }
    expect((await d([entry], 'consume', t))[0]?.allowed).toBe(true);
    expect(await d([entry], 'consume', t + 1)).toEqual([
      { allowed: false, remaining: 0, resetMs: 999, retryAfterMs: 600_000, banned: true },
    ]);
    expect((await d([entry], 'consume', t + 300_001))[0]).toMatchObject({
      banned: true,
      retryAfterMs: 300_000,
    });
    expect((await d([entry], 'consume', t + 600_001))[0]?.allowed).toBe(true);
  });

  it('violations outside the window start it again: no escalation', async () => {
    const d = make();
    const policy = withBan(makePolicy('fixed-window', 1, 1000, 'login'), {
      blockMs: 1000,
      violations: 2,
      violationWindowMs: 10_000,
      escalatedBlockMs: 100_000,
    });
    const entry: StoreEntry = { key: `${fresh()}:{a}:login`, policy, cost: 1 };
    await d([entry], 'consume', T0);
    expect((await d([entry], 'consume', T0 + 1))[0]?.retryAfterMs).toBe(1000);
    await d([entry], 'consume', T0 + 20_000);
    expect((await d([entry], 'consume', T0 + 20_001))[0]?.retryAfterMs).toBe(1000);
    await d([entry], 'consume', T0 + 22_000);
    expect((await d([entry], 'consume', T0 + 22_001))[0]?.retryAfterMs).toBe(100_000);
  });

  it('peek reports a ban in force but never starts one', async () => {
    const d = make();
    const policy = withBan(makePolicy('token-bucket', 1, 1000, 'api'), { blockMs: 60_000 });
    const entry: StoreEntry = { key: `${fresh()}:{a}:api`, policy, cost: 1 };
    await d([entry], 'consume', T0);
    expect(await d([entry], 'peek', T0)).toEqual([
      { allowed: false, remaining: 0, resetMs: 1000, retryAfterMs: 1000 },
    ]);
    expect((await d([entry], 'peek', T0 + 1000))[0]?.allowed).toBe(true);
    await d([entry], 'consume', T0 + 1000);
    expect((await d([entry], 'consume', T0 + 1000))[0]?.banned).toBe(true);
    expect((await d([entry], 'peek', T0 + 2000))[0]).toMatchObject({ allowed: false, banned: true });
  });

  it('a banned entry charges no policy of the check; a shadow ban is reported, the enforced policy still charged', async () => {
    const d = make();
    const wide = makePolicy('token-bucket', 100, 100_000, 'wide');
    const banning = withBan(makePolicy('fixed-window', 1, 60_000, 'strict'), { blockMs: 120_000 });
    const id = fresh();
    const both: StoreEntry[] = [
      { key: `${id}:{a}:wide`, policy: wide, cost: 1 },
      { key: `${id}:{a}:strict`, policy: banning, cost: 1 },
    ];
    expect((await d(both, 'consume', T0)).map((v) => v.allowed)).toEqual([true, true]);
    expect((await d(both, 'consume', T0))[1]?.banned).toBe(true);
    const later = await d(both, 'consume', T0 + 90_000);
    expect(later[1]).toMatchObject({ allowed: false, banned: true, retryAfterMs: 30_000 });
    // wide: 99 left after the first request, refilled to full by now; never charged by the banned ones.
    expect(later[0]?.remaining).toBe(100);

    const shadow: CompiledPolicy = { ...banning, name: 'probe', shadow: true };
    const mixed: StoreEntry[] = [
      { key: `${id}:{b}:wide`, policy: wide, cost: 1 },
      { key: `${id}:{b}:probe`, policy: shadow, cost: 1 },
    ];
    await d(mixed, 'consume', T0);
    expect((await d(mixed, 'consume', T0 + 1))[1]).toMatchObject({ allowed: false, banned: true });
    const reported = await d(mixed, 'consume', T0 + 61_000);
    expect(reported[1]).toMatchObject({ allowed: false, banned: true, retryAfterMs: 59_001 });
    expect(reported[0]?.allowed).toBe(true);
    expect(reported[0]?.remaining).toBeLessThan(100);
  });
});

describe('the ban key on Redis', () => {
  it("lives in the policy key's slot with a TTL of the block, or of the violation window when longer", async () => {
    const id = fresh();
    const short = withBan(makePolicy('fixed-window', 1, 1000, 'a'), { blockMs: 2000 });
    const long = withBan(makePolicy('fixed-window', 1, 1000, 'b'), {
      blockMs: 2000,
      violations: 3,
      violationWindowMs: 90_000,
      escalatedBlockMs: 5000,
    });
    for (const policy of [short, long]) {
      const entry: StoreEntry = { key: `${id}:{x}:${policy.name}`, policy, cost: 1 };
      await evalDecide(redis, [entry], 'consume');
      const [denied] = await evalDecide(redis, [entry], 'consume');
      expect(denied?.banned).toBe(true);
      const ttl = await redis.pttl(banKeyOf(entry.key));
      const expected = policy === short ? 2001 : 90_001;
      expect(ttl).toBeGreaterThan(expected - 1000);
      expect(ttl).toBeLessThanOrEqual(expected);
    }
  });

  it('keeps a ban key at least 600000 ms when the time is explicit, and at most 1e15 ms', async () => {
    const id = fresh();
    const short = withBan(makePolicy('fixed-window', 1, 1000, 'a'), { blockMs: 2000 });
    const long = withBan(makePolicy('fixed-window', 1, 1000, 'b'), { blockMs: 2e15 });
    for (const policy of [short, long]) {
      const entry: StoreEntry = { key: `${id}:{t}:${policy.name}`, policy, cost: 1 };
      await evalDecide(redis, [entry], 'consume', T0);
      const [denied] = await evalDecide(redis, [entry], 'consume', T0 + 1);
      expect(denied).toMatchObject({ banned: true, retryAfterMs: policy.ban!.blockMs });
      const ttl = await redis.pttl(banKeyOf(entry.key));
      const expected = policy === short ? 600_000 : 1e15;
      expect(ttl).toBeGreaterThan(expected - 60_000);
      expect(ttl).toBeLessThanOrEqual(expected);
    }
  });
});

/** A ban of random lengths, escalating or not. */
const banArb: fc.Arbitrary<CompiledBan> = fc.oneof(
  fc.integer({ min: 1, max: 20_000 }).map((blockMs) => ({
    blockMs,
    violations: 0,
    violationWindowMs: 0,
    escalatedBlockMs: blockMs,
  })),
  fc
    .record({
      blockMs: fc.integer({ min: 1, max: 20_000 }),
      violations: fc.integer({ min: 2, max: 4 }),
      violationWindowMs: fc.integer({ min: 1, max: 100_000 }),
      extraMs: fc.integer({ min: 0, max: 100_000 }),
    })
    .map(({ blockMs, violations, violationWindowMs, extraMs }) => ({
      blockMs,
      violations,
      violationWindowMs,
      escalatedBlockMs: blockMs + extraMs,
    })),
);

/** Policies of random algorithms, enforced or shadow, each with a ban or none. */
const bannedPoliciesArb = mixedPoliciesArb.chain((policies) =>
  fc.tuple(
    ...policies.map((p) =>
      fc.option(banArb, { nil: undefined }).map((ban) => (ban === undefined ? p : { ...p, ban })),
    ),
  ),
);

const scriptSide = (form: 'short' | 'full'): DecideSide => ({
  decide: redisDecide(redis, form),
  forget: (keys) => redis.del(...keys),
});

describe('MemoryStore and the Redis script decide bans identically', () => {
  it.each(['short', 'full'] as const)(
    'for random multi-policy histories with bans, time moving forward (differential, %s form)',
    async (form) => {
      const script = scriptSide(form);
      await fc.assert(
        fc.asyncProperty(
          bannedPoliciesArb.chain((ps) => fc.tuple(fc.constant(ps), multiOpsArb(ps, false), startTimeArb)),
          async ([policies, ops, t0]) => {
            await expectSameSteps(script, memorySide(), multiOpSteps(policies, ops, t0, fresh()));
          },
        ),
        { numRuns: 60 },
      );
    },
    PROPERTY_TIMEOUT_MS,
  );
});

describe.each(SIDES)('the ban property on %s', (_name, make) => {
  it.each(ALL_ALGORITHMS)(
    '%s: during its block a ban never admits and never charges',
    async (algorithm) => {
      await fc.assert(
        fc.asyncProperty(
          policyArb(algorithm).chain((p) =>
            fc.tuple(
              banArb.map((ban) => ({ ...p, ban })),
              opsArb(p, false, 40),
            ),
          ),
          startTimeArb,
          async ([policy, ops], t0) => {
            const d = make();
            const prefix = fresh();
            let now = t0;
            /** Per key: the end of the block last reported. */
            const blockedUntil = new Map<string, number>();
            for (const op of ops) {
              now += op.dtMs;
              const entry: StoreEntry = { key: `${prefix}:{k${op.key}}:p`, policy, cost: op.cost };
              const before = (await d([entry], 'peek', now))[0] as StoreVerdict;
              const [v] = (await d([entry], op.mode, now)) as [StoreVerdict];
              const until = blockedUntil.get(entry.key) ?? Number.NEGATIVE_INFINITY;
              if (now < until) {
                expect(v.allowed).toBe(false);
                expect(v.banned).toBe(true);
                // Nothing charged: the state is what it was before the call.
                expect(await d([entry], 'peek', now)).toEqual([before]);
              }
              if (v.banned === true) expect(v.allowed).toBe(false);
              if (v.banned === true && before.banned !== true) {
                // A ban this call started: blocked for at least blockMs from now.
                expect(op.mode).toBe('consume');
                if (v.retryAfterMs !== -1) expect(v.retryAfterMs).toBeGreaterThanOrEqual(policy.ban.blockMs);
                blockedUntil.set(entry.key, Math.max(until, now + policy.ban.blockMs));
              }
            }
          },
        ),
        { numRuns: 25 },
      );
    },
    PROPERTY_TIMEOUT_MS,
  );
});
