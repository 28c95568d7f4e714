import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisProcess, startRedis } from '../../../../test/support/redis-server.js';
import {
  ALL_ALGORITHMS,
  chargedEntries,
  checkPromises,
  type Decide,
  type DecideSide,
  entriesFor,
  expectSameSteps,
  makePolicy,
  memoryDecide,
  memorySide,
  mixedPoliciesArb,
  multiOpSteps,
  multiOpsArb,
  opSteps,
  opsArb,
  policiesArb,
  policyArb,
  type RateAlgorithm,
  runInvariants,
  startTimeArb,
} from '../algorithms/testing.test-support.js';
import type { Algorithm, CompiledPolicy, StoreEntry, StoreMode, StoreVerdict } from '../types.js';
import {
  DECIDE_SCRIPT,
  decodeScriptReply,
  encodeScriptArgs,
  encodeScriptKeys,
  ScriptCall,
} from './script.js';
import { evalDecide, fullFormArgs, redisDecide } from './script.test-support.js';

/**
 * Time a fast-check property of this file may take: its runs take 1-3 s on a quiet 2-core machine
 * and several times that in a full parallel run, past the 5 s default.
 */
const PROPERTY_TIMEOUT_MS = 60_000;

let server: RedisProcess;
let redis: Redis;
let decide: Decide;
let run = 0;
/** A key prefix no other run used. */
const fresh = (): string => `t${++run}`;

beforeAll(async () => {
  server = await startRedis();
  redis = new Redis(server.port, '127.0.0.1', { maxRetriesPerRequest: 1 });
  decide = redisDecide(redis);
});

afterAll(async () => {
  redis?.disconnect();
  await server?.stop();
});

const T0 = 1_764_400_000_000.25;
/** The decide script in one of its forms, forgetting keys with DEL. */
const scriptSide = (form: 'short' | 'full'): DecideSide => ({
  decide: redisDecide(redis, form),
  forget: (keys) => redis.del(...keys),
});
/** A time in ms as the sliding log stores it: whole microseconds. */
const us = (ms: number) => Math.round(ms * 1000);
/** [time in µs, cumulative units] of each record of a stored sliding log, after its 16-char header. */
const records = (log: string) =>
  (log.slice(16).match(/.{32}/g) ?? []).map((r) => [Number(r.slice(0, 16)), Number(r.slice(16))]);

describe('embedded decide script', () => {
  it('carries the SHA1 that SCRIPT LOAD returns', async () => {
    expect(DECIDE_SCRIPT.sha1).toMatch(/^[0-9a-f]{40}$/);
    expect(await redis.script('LOAD', DECIDE_SCRIPT.source)).toBe(DECIDE_SCRIPT.sha1);
  });

  it('encodes ARGV as nowMs, the policy table, then mode, requestTtlMs, entryCount and policy, cost per entry', () => {
    const p = makePolicy('gcra', 3, 1000);
    expect(encodeScriptArgs([{ key: 'a', policy: p, cost: 2 }], 'consume', 12.5)).toEqual([
      '12.5',
      '1',
      'gcra',
      '3',
      '1000',
      '333.3333333333333',
      '0',
      'consume',
      '',
      '1',
      '1',
      '2',
    ]);
    expect(encodeScriptArgs([{ key: 'a', policy: p, cost: 1 }], 'peek')[0]).toBe('');
    expect(encodeScriptArgs([{ key: 'a', policy: p, cost: 1 }], 'consume', undefined, 5000)[8]).toBe('5000');
    expect(() => encodeScriptArgs([{ key: 'a', policy: p, cost: 1 }], 'consume', undefined, 0)).toThrow(
      /requestTtlMs/,
    );
    expect(() => encodeScriptArgs([{ key: 'a', policy: p, cost: 1 }], 'consume', Number.NaN)).toThrow(
      /nowMs/,
    );
    expect(encodeScriptKeys([{ key: 'a', policy: p, cost: 1 }], 'r')).toEqual(['a', 'r']);
    expect(() => encodeScriptKeys([{ key: 'a', policy: p, cost: 1 }], 'a')).toThrow(/requestKey/);
  });

  it('sends each policy once per call, however many decisions use it', () => {
    const a = makePolicy('gcra', 3, 1000);
    const b = makePolicy('fixed-window', 5, 60_000);
    const call = new ScriptCall('');
    call.add([{ key: 'x:a', policy: a, cost: 1 }], 'consume');
    call.add(
      [
        { key: 'y:a', policy: a, cost: 1 },
        { key: 'y:b', policy: b, cost: 2 },
      ],
      'peek',
      'y:r',
      100,
    );
    expect(() => call.add([{ key: 'z:a', policy: a, cost: 0 }], 'consume')).toThrow(/cost/);
    expect(call.keys).toEqual(['x:a', 'y:a', 'y:b', 'y:r']);
    expect(call.replyItems).toBe(12);
    expect(call.args()).toEqual([
      '',
      '2',
      ...['gcra', '3', '1000', '333.3333333333333', '0'],
      ...['fixed-window', '5', '60000', '12000', '0'],
      '1',
      ...['peek', '100', '2', '1', '1', '2', '2'],
    ]);
  });

  it('sends a consume of one unit of one policy without a record as one item, its policy index', () => {
    const a = makePolicy('gcra', 3, 1000);
    const b = makePolicy('fixed-window', 5, 60_000);
    const call = new ScriptCall('');
    call.add([{ key: 'x:b', policy: b, cost: 1 }], 'consume');
    call.add([{ key: 'y:a', policy: a, cost: 1 }], 'consume');
    call.add([{ key: 'z:b', policy: b, cost: 1 }], 'consume');
    // Any other decision takes the full form: a cost, a peek, a record, two entries.
    call.add([{ key: 'w:b', policy: b, cost: 2 }], 'consume');
    call.add([{ key: 'v:b', policy: b, cost: 1 }], 'peek');
    call.add([{ key: 'u:b', policy: b, cost: 1 }], 'consume', 'u:r', 100);
    expect(call.args().slice(12)).toEqual([
      '1',
      '2',
      '1',
      ...['consume', '', '1', '1', '2'],
      ...['peek', '', '1', '1', '1'],
      ...['consume', '100', '1', '1', '1'],
    ]);
  });

  it('decides a short-form decision exactly as its full form', async () => {
    const p = makePolicy('token-bucket', 3, 1000);
    const prefix = fresh();
    // One call of four short-form decisions on one key, against four calls of the full form.
    const short = new ScriptCall(String(T0));
    for (let i = 0; i < 4; i++) short.add([{ key: `${prefix}:s`, policy: p, cost: 1 }], 'consume');
    expect(short.args().slice(7)).toEqual(['1', '1', '1', '1']);
    const fromShort = await redis.evalsha(DECIDE_SCRIPT.sha1, 4, ...short.keys, ...short.args());
    const policyArgs = ['token-bucket', '3', '1000', '333.3333333333333', '0'];
    const fullArgs = [String(T0), '1', ...policyArgs, ...['consume', '', '1', '1', '1']];
    const fromFull: unknown[] = [];
    for (let i = 0; i < 4; i++) {
      const reply = (await redis.evalsha(DECIDE_SCRIPT.sha1, 1, `${prefix}:f`, ...fullArgs)) as unknown[];
      fromFull.push(...reply);
    }
    expect(fromShort).toEqual(fromFull);
    expect((fromShort as number[]).filter((_, k) => k % 4 === 0)).toEqual([1, 1, 1, 0]);
    expect(await redis.get(`${prefix}:s`)).toBe(await redis.get(`${prefix}:f`));
  });

  it('decodes replies and refuses malformed ones', () => {
    const p = makePolicy('gcra', 3, 1000);
    const entries: StoreEntry[] = [{ key: 'a', policy: p, cost: 1 }];
    expect(decodeScriptReply([1, 2, 334, 0], entries)).toEqual([
      { allowed: true, remaining: 2, resetMs: 334, retryAfterMs: 0 },
    ]);
    expect(decodeScriptReply(['0', '0', '1000', '-1'], entries)).toEqual([
      { allowed: false, remaining: 0, resetMs: 1000, retryAfterMs: -1 },
    ]);
    expect(() => decodeScriptReply([1, 2, 3], entries)).toThrow(/shape/);
    // 2 is a deny of a banned identity (policy.ban); anything else is malformed.
    expect(decodeScriptReply([2, 2, 3, 9000], entries)).toEqual([
      { allowed: false, remaining: 2, resetMs: 3, retryAfterMs: 9000, banned: true },
    ]);
    expect(() => decodeScriptReply([3, 2, 3, 0], entries)).toThrow(/allowed/);
    expect(() => decodeScriptReply([1, 'x', 3, 0], entries)).toThrow(/remaining/);
  });

  it('returns error replies for bad arguments and writes nothing', async () => {
    const key = `${fresh()}:{e}:a`;
    const GCRA = ['gcra', 1, 1000, 1000, 0];
    const call = (...args: (string | number)[]) => redis.eval(DECIDE_SCRIPT.source, 1, key, ...args);
    await expect(call('', 1, ...GCRA, 'spend', '', 1, 1, 1)).rejects.toThrow(/mode/);
    await expect(call('', 1, 'leaky', 1, 1000, 1000, 0, 'consume', '', 1, 1, 1)).rejects.toThrow(
      /unknown algorithm/,
    );
    await expect(call('', 1, ...GCRA, 'consume', '', 1, 1)).rejects.toThrow(/arguments/);
    await expect(call('', 1, 'gcra', 1, 1000, 1000)).rejects.toThrow(/arguments/);
    await expect(call('', 1, 'gcra', 1, 1000, 1000, 'yes', 'consume', '', 1, 1, 1)).rejects.toThrow(/shadow/);
    await expect(call('', 0)).rejects.toThrow(/policyCount/);
    await expect(call('', 1, ...GCRA, 'consume', '', 0, 1, 1)).rejects.toThrow(/entryCount/);
    await expect(call('', 1, ...GCRA, 'consume', '', 1, 2, 1)).rejects.toThrow(/policy index/);
    await expect(call('', 1, 'gcra', 0, 1000, 1000, 0, 'consume', '', 1, 1, 1)).rejects.toThrow(/positive/);
    await expect(call('', 1, ...GCRA, 'consume', '', 1, 1, 0)).rejects.toThrow(/cost/);
    await expect(call('soon', 1, ...GCRA, 'consume', '', 1, 1, 1)).rejects.toThrow(/nowMs/);
    await expect(call('-1', 1, ...GCRA, 'consume', '', 1, 1, 1)).rejects.toThrow(/nowMs/);
    await expect(call('1e13', 1, ...GCRA, 'consume', '', 1, 1, 1)).rejects.toThrow(/nowMs/);
    await expect(call('', 1, 'sliding-log', 5, 1000, 200, 0, 'consume', '', 1, 1, 1.5)).rejects.toThrow(
      /whole number/,
    );
    await expect(call('', 1, 'sliding-log', 2e15, 1000, 1, 0, 'consume', '', 1, 1, 1)).rejects.toThrow(
      /sliding-log limit/,
    );
    await expect(call('', 1, ...GCRA, 'consume', 'x', 1, 1, 1)).rejects.toThrow(/requestTtlMs/);
    await expect(call('', 1, ...GCRA)).rejects.toThrow(/at least one decision/);
    await expect(
      redis.eval(DECIDE_SCRIPT.source, 2, key, `${key}2`, '', 1, ...GCRA, 'consume', '', 1, 1, 1),
    ).rejects.toThrow(/keys/);
    // a bad second entry: the first entry is not charged either
    await expect(
      redis.eval(DECIDE_SCRIPT.source, 2, key, `${key}2`, '', 1, ...GCRA, 'consume', '', 2, 1, 1, 9, 1),
    ).rejects.toThrow(/policy index/);
    // a bad second decision of a batch: the first decision is not charged either
    await expect(
      redis.eval(
        DECIDE_SCRIPT.source,
        2,
        key,
        `${key}2`,
        '',
        1,
        ...GCRA,
        'consume',
        '',
        1,
        1,
        1,
        'consume',
        '',
        1,
        1,
        -1,
      ),
    ).rejects.toThrow(/cost/);
    expect(await redis.exists(key, `${key}2`)).toBe(0);
  });

  it('treats a key of another type or an unparsable value as fresh', async () => {
    const p = fresh();
    await redis.zadd(`${p}:{w}:tb`, 1, 'm');
    await redis.set(`${p}:{w}:log`, 'not a log');
    await redis.set(`${p}:{w}:fw`, 'garbage|x');
    const entries: StoreEntry[] = [
      { key: `${p}:{w}:tb`, policy: makePolicy('token-bucket', 5, 1000), cost: 1 },
      { key: `${p}:{w}:log`, policy: makePolicy('sliding-log', 5, 1000), cost: 1 },
      { key: `${p}:{w}:fw`, policy: makePolicy('fixed-window', 5, 1000), cost: 1 },
    ];
    const verdicts = await evalDecide(redis, entries, 'consume', T0);
    expect(verdicts.map((v) => [v.allowed, v.remaining])).toEqual([
      [true, 4],
      [true, 4],
      [true, 4],
    ]);
    expect(await redis.type(`${p}:{w}:tb`)).toBe('string');
    expect(await redis.type(`${p}:{w}:log`)).toBe('string');
  });
});

describe('sliding log with large costs', () => {
  it('keeps one record per admitted request and decides like MemoryStore', async () => {
    const policy = makePolicy('sliding-log', 2500, 60_000);
    const key = `${fresh()}:{big}:log`;
    const memory = memoryDecide().decide;
    const allowed: boolean[] = [];
    for (const [cost, at] of [
      [2400, T0],
      [101, T0 + 1],
      [100, T0 + 2],
      [1, T0 + 60_000.5],
    ] as const) {
      const entries: StoreEntry[] = [{ key, policy, cost }];
      const [v] = (await decide(entries, 'consume', at)) as [StoreVerdict];
      expect([v]).toEqual(await memory(entries, 'consume', at));
      allowed.push(v.allowed);
    }
    expect(allowed).toEqual([true, false, true, true]);
    // the 2400 admitted at T0 left the window: a 16-char header (2400 units before the
    // first record), then the 100 at T0 + 2 and the 1 at T0 + 60000.5, 32 chars each
    // (time in whole microseconds, cumulative units)
    const log = (await redis.get(key)) as string;
    expect(log).toHaveLength(16 + 2 * 32);
    expect(Number(log.slice(0, 16))).toBe(2400);
    expect(records(log)).toEqual([
      [us(T0 + 2), 2500],
      [us(T0 + 60_000.5), 2501],
    ]);
  });
});

describe('sliding log records', () => {
  it('appends in place while expired records are fewer than live ones, then rewrites', async () => {
    const policy = makePolicy('sliding-log', 10, 1000);
    const key = `${fresh()}:{inplace}:log`;
    const memory = memoryDecide().decide;
    const run = async (cost: number, at: number) => {
      const entries: StoreEntry[] = [{ key, policy, cost }];
      const [v] = (await decide(entries, 'consume', at)) as [StoreVerdict];
      expect([v]).toEqual(await memory(entries, 'consume', at));
      return v;
    };
    await run(1, T0);
    await run(2, T0 + 1);
    await run(3, T0 + 2);
    // T0 left the window: 1 expired record, 2 live ones, so the new one is appended
    expect((await run(1, T0 + 1000.5)).remaining).toBe(4);
    // stamped like the newest: its units go into that record
    expect((await run(2, T0 + 1000.5)).remaining).toBe(2);
    let log = (await redis.get(key)) as string;
    expect(Number(log.slice(0, 16))).toBe(0);
    expect(records(log)).toEqual([
      [us(T0), 1],
      [us(T0 + 1), 3],
      [us(T0 + 2), 6],
      [us(T0 + 1000.5), 9],
    ]);
    // time goes backwards: the expired record still kept counts again (never more room)
    const back = await run(2, T0 + 999);
    expect([back.allowed, back.remaining]).toEqual([false, 1]);
    // T0 + 1 and T0 + 2 leave too: 3 expired records against 1 live one, so it is rewritten
    expect((await run(1, T0 + 1002.5)).remaining).toBe(6);
    log = (await redis.get(key)) as string;
    expect(Number(log.slice(0, 16))).toBe(6);
    expect(records(log)).toEqual([
      [us(T0 + 1000.5), 9],
      [us(T0 + 1002.5), 10],
    ]);
  });
});

describe('sliding log near the exact-integer bound', () => {
  it('rebases its cumulative units to 0 and still decides like MemoryStore', async () => {
    const policy = makePolicy('sliding-log', 1e15, 1000);
    const key = `${fresh()}:{rebase}:log`;
    const memory = memoryDecide().decide;
    const steps = [
      [4e14, T0],
      [4e14, T0 + 1],
      [4e14, T0 + 1000.5], // the first 4e14 left: 1.2e15 units counted in all, rebased
      [2e14, T0 + 1000.75], // 1e15 live after this: full
      [1, T0 + 1000.8],
    ] as const;
    const allowed: boolean[] = [];
    for (const [cost, at] of steps) {
      const entries: StoreEntry[] = [{ key, policy, cost }];
      const [v] = (await decide(entries, 'consume', at)) as [StoreVerdict];
      expect([v]).toEqual(await memory(entries, 'consume', at));
      allowed.push(v.allowed);
    }
    expect(allowed).toEqual([true, true, true, true, false]);
    const log = (await redis.get(key)) as string;
    expect(Number(log.slice(0, 16))).toBe(0);
    expect(records(log).map(([, cum]) => cum)).toEqual([4e14, 8e14, 1e15]);
  });
});

describe.each(ALL_ALGORITHMS)('%s on Redis (explicit time)', (algorithm) => {
  it(
    'keeps the design.md invariants over random histories, time going backwards included',
    async () => {
      await fc.assert(
        fc.asyncProperty(
          policyArb(algorithm, true).chain((policy) =>
            fc.tuple(fc.constant(policy), opsArb(policy, true, 20), startTimeArb),
          ),
          async ([policy, ops, t0]) => {
            await runInvariants(decide, policy, ops, t0, fresh());
          },
        ),
        { numRuns: 25 },
      );
    },
    PROPERTY_TIMEOUT_MS,
  );

  it.each(['short', 'full'] as const)(
    'decides exactly like MemoryStore over random histories, time going both ways (%s form)',
    async (form) => {
      const script = scriptSide(form);
      await fc.assert(
        fc.asyncProperty(
          fc
            .tuple(policyArb(algorithm, true), fc.boolean())
            .map(([policy, shadow]) => ({ ...policy, shadow }) satisfies CompiledPolicy)
            .chain((policy) => fc.tuple(fc.constant(policy), opsArb(policy, true, 30), startTimeArb)),
          async ([policy, ops, t0]) => {
            await expectSameSteps(script, memorySide(), opSteps(policy, ops, t0, fresh()));
          },
        ),
        { numRuns: 40 },
      );
    },
    PROPERTY_TIMEOUT_MS,
  );

  it('admits exactly `limit` units at one instant, then denies', async () => {
    await fc.assert(
      fc.asyncProperty(policyArb(algorithm), startTimeArb, async (policy, t0) => {
        const key = `${fresh()}:{x}:p`;
        let admitted = 0;
        for (let i = 0; i < policy.limit + 2; i++) {
          const [v] = (await decide([{ key, policy, cost: 1 }], 'consume', t0)) as [StoreVerdict];
          if (v.allowed) admitted++;
        }
        expect(admitted).toBe(policy.limit);
      }),
      { numRuns: 20 },
    );
  });

  it('keeps its promises: admitted retryAfterMs later, full resetMs later', async () => {
    await fc.assert(
      fc.asyncProperty(
        policyArb(algorithm, true).chain((policy) =>
          fc.tuple(fc.constant(policy), opsArb(policy, false, 10), startTimeArb),
        ),
        async ([policy, ops, t0]) => {
          await checkPromises(decide, policy, ops, t0, `${fresh()}:{p}:x`);
        },
      ),
      { numRuns: 30 },
    );
  });

  it('never lets keys share state', async () => {
    const policy = makePolicy(algorithm, 3, 1000);
    const p = fresh();
    const a: StoreEntry = { key: `${p}:{a}:x`, policy, cost: 3 };
    const b: StoreEntry = { key: `${p}:{b}:x`, policy, cost: 1 };
    expect((await decide([a], 'consume', T0))[0]?.remaining).toBe(0);
    expect((await decide([b], 'peek', T0))[0]).toEqual({
      allowed: true,
      remaining: 3,
      resetMs: 0,
      retryAfterMs: 0,
    });
  });
});

describe.each(['token-bucket', 'gcra'] as const)('%s refill on Redis', (algorithm) => {
  it('earns back exactly one unit per intervalMs, fractional intervals included', async () => {
    await fc.assert(
      fc.asyncProperty(policyArb(algorithm), startTimeArb, async (policy, t0) => {
        const entry: StoreEntry = { key: `${fresh()}:{r}:p`, policy, cost: policy.limit };
        expect((await decide([entry], 'consume', t0))[0]?.allowed).toBe(true);
        for (let k = 0; k <= policy.limit; k++) {
          const [v] = (await decide([entry], 'peek', t0 + k * policy.intervalMs)) as [StoreVerdict];
          expect(v.remaining).toBe(k);
        }
      }),
      { numRuns: 20 },
    );
  });
});

describe('MemoryStore and the Redis script decide identically', () => {
  it.each(['short', 'full'] as const)(
    'for random multi-policy sequences, enforced and shadow mixed, with explicit time going both ways (differential, %s form)',
    async (form) => {
      const script = scriptSide(form);
      await fc.assert(
        fc.asyncProperty(
          mixedPoliciesArb.chain((ps) => fc.tuple(fc.constant(ps), multiOpsArb(ps, true), startTimeArb)),
          async ([policies, ops, t0]) => {
            await expectSameSteps(script, memorySide(), multiOpSteps(policies, ops, t0, fresh()));
          },
        ),
        { numRuns: 60 },
      );
    },
  );

  it('writes the full form of a short-form decision out as the script parses it', () => {
    const p = makePolicy('gcra', 3, 1000);
    const short = encodeScriptArgs([{ key: 'a', policy: p, cost: 1 }], 'consume', 5);
    expect(short).toEqual(['5', '1', 'gcra', '3', '1000', '333.3333333333333', '0', '1']);
    expect(fullFormArgs(short)).toEqual([...short.slice(0, 7), 'consume', '', '1', '1', '1']);
    const peek = encodeScriptArgs([{ key: 'a', policy: p, cost: 1 }], 'peek', 5);
    expect(fullFormArgs(peek)).toEqual(peek);
  });
});

describe.each([
  ['MemoryStore', () => memoryDecide().decide],
  ['Redis script', () => decide],
] as const)('multi-policy on %s', (_name, make) => {
  it(
    'charges every policy when all allow and none when any denies; a step back in time gives no policy more',
    async () => {
      await fc.assert(
        fc.asyncProperty(
          policiesArb.chain((ps) => fc.tuple(fc.constant(ps), multiOpsArb(ps, true), startTimeArb)),
          async ([policies, ops, t0]) => {
            const d = make();
            const prefix = fresh();
            let now = t0;
            let maxNow = t0;
            for (const op of ops) {
              now += op.dtMs;
              const entries = entriesFor(prefix, policies, op);
              // A step back in time gives no policy of the call more than it had at the latest time.
              const latest = now < maxNow ? await d(entries, 'peek', maxNow) : undefined;
              const before = await d(entries, 'peek', now);
              maxNow = Math.max(maxNow, now);
              latest?.forEach((v, i) => {
                expect(before[i]?.remaining, `${entries[i]?.key} back in time`).toBeLessThanOrEqual(
                  v.remaining,
                );
              });
              const verdicts = await d(entries, op.mode, now);
              const after = await d(entries, 'peek', now);
              expect(verdicts.map((v) => v.allowed)).toEqual(before.map((v) => v.allowed));
              const all = verdicts.every((v) => v.allowed);
              if (op.mode === 'peek' || !all) {
                expect(after).toEqual(before);
                expect(verdicts).toEqual(before);
              } else {
                entries.forEach((entry, i) => {
                  expect(after[i]?.remaining).toBe(verdicts[i]?.remaining);
                  expect(verdicts[i]?.remaining).toBeLessThanOrEqual(
                    (before[i]?.remaining as number) - Math.floor(entry.cost),
                  );
                });
              }
            }
          },
        ),
        { numRuns: 40 },
      );
    },
    PROPERTY_TIMEOUT_MS,
  );
});

describe.each([
  ['MemoryStore', () => memoryDecide().decide],
  ['Redis script, short form', () => redisDecide(redis, 'short')],
  ['Redis script, full form', () => redisDecide(redis, 'full')],
] as const)('shadow entries on %s', (_name, make) => {
  const shadowOf = (p: CompiledPolicy): CompiledPolicy => ({ ...p, shadow: true });
  const enforced = makePolicy('fixed-window', 2, 60_000, 'enforced');
  const probe = shadowOf(makePolicy('fixed-window', 1, 60_000, 'probe'));
  const wide = shadowOf(makePolicy('token-bucket', 10, 60_000, 'wide'));

  it('charges the enforced entries when every enforced one allows, the shadow ones when every entry allows', async () => {
    const d = make();
    const p = fresh();
    const entry = (policy: CompiledPolicy): StoreEntry => ({
      key: `${p}:{s}:${policy.name}`,
      policy,
      cost: 1,
    });
    const step = async (policies: CompiledPolicy[], mode: StoreMode = 'consume') =>
      (await d(policies.map(entry), mode, T0)).map((v) => [v.allowed, v.remaining]);
    // All allow: all charged.
    expect(await step([enforced, probe, wide])).toEqual([
      [true, 1],
      [true, 0],
      [true, 9],
    ]);
    // A peek of a mix charges nothing.
    expect(await step([enforced, probe, wide], 'peek')).toEqual([
      [true, 1],
      [false, 0],
      [true, 9],
    ]);
    // Only a shadow entry denies: the enforced one is charged, no shadow one.
    expect(await step([enforced, probe, wide])).toEqual([
      [true, 0],
      [false, 0],
      [true, 9],
    ]);
    // An enforced deny: nothing charged.
    expect(await step([enforced, wide])).toEqual([
      [false, 0],
      [true, 9],
    ]);
    // Shadow entries only, one denies: nothing charged.
    expect(await step([probe, wide])).toEqual([
      [false, 0],
      [true, 9],
    ]);
    // One shadow entry alone (the short form) is charged when it allows.
    expect(await step([wide])).toEqual([[true, 8]]);
    expect(await step([wide, probe, enforced], 'peek')).toEqual([
      [true, 8],
      [false, 0],
      [false, 0],
    ]);
  });

  it('keeps to the charge rule over random mixes of shadow and enforced entries', async () => {
    await fc.assert(
      fc.asyncProperty(
        mixedPoliciesArb.chain((ps) => fc.tuple(fc.constant(ps), multiOpsArb(ps), startTimeArb)),
        async ([policies, ops, t0]) => {
          const decideAt = make();
          const prefix = fresh();
          let now = t0;
          for (const op of ops) {
            now += op.dtMs;
            const entries = entriesFor(prefix, policies, op);
            const before = await decideAt(entries, 'peek', now);
            const verdicts = await decideAt(entries, op.mode, now);
            const after = await decideAt(entries, 'peek', now);
            expect(verdicts.map((v) => v.allowed)).toEqual(before.map((v) => v.allowed));
            chargedEntries(entries, verdicts, op.mode).forEach((charged, i) => {
              const label = `${entries[i]?.key}${entries[i]?.policy.shadow ? ' (shadow)' : ''}`;
              if (charged) {
                expect(after[i]?.remaining, label).toBe(verdicts[i]?.remaining);
                expect(verdicts[i]?.remaining, label).toBeLessThanOrEqual(
                  (before[i]?.remaining as number) - Math.floor((entries[i] as StoreEntry).cost),
                );
              } else {
                expect(verdicts[i], label).toEqual(before[i]);
                expect(after[i], label).toEqual(before[i]);
              }
            });
          }
        },
      ),
      { numRuns: 25 },
    );
  });
});

describe.each([
  ['MemoryStore', () => memoryDecide().decide],
  ['Redis script, short form', () => redisDecide(redis, 'short')],
  ['Redis script, full form', () => redisDecide(redis, 'full')],
] as const)('a step back in time on %s', (_name, make) => {
  const at = async (
    d: Decide,
    key: string,
    policy: CompiledPolicy,
    mode: StoreMode,
    nowMs: number,
    cost = 1,
  ) => ((await d([{ key, policy, cost }], mode, nowMs)) as [StoreVerdict])[0];

  it('freezes a token bucket at the latest time it saw: no refill and no loss', async () => {
    const d = make();
    const key = `${fresh()}:{back}:tb`;
    const policy = makePolicy('token-bucket', 10, 1000); // 1 token / 100 ms
    expect((await at(d, key, policy, 'consume', T0, 10)).remaining).toBe(0);
    expect((await at(d, key, policy, 'consume', T0 + 500, 2)).remaining).toBe(3);
    for (const backMs of [0.001, 1, 300, 500, 1e7]) {
      // 3 tokens counted at T0 + 500: from T0 + 500 - backMs the bucket is full 700 ms after T0 + 500.
      expect(await at(d, key, policy, 'peek', T0 + 500 - backMs)).toEqual({
        allowed: true,
        remaining: 3,
        resetMs: Math.ceil(700 + backMs),
        retryAfterMs: 0,
      });
    }
    expect((await at(d, key, policy, 'consume', T0 + 200)).remaining).toBe(2);
    expect((await at(d, key, policy, 'peek', T0 + 600)).remaining).toBe(3);
  });

  it('keeps a sliding window in the later window, its elapsed part clamped at 0', async () => {
    const d = make();
    const key = `${fresh()}:{back}:sw`;
    const policy = makePolicy('sliding-window', 10, 1000);
    const start = 1_764_400_000_000; // a window boundary
    expect((await at(d, key, policy, 'consume', start + 500, 2)).remaining).toBe(8);
    // Half of the previous window's 2 still weigh: 1 + 4.
    expect((await at(d, key, policy, 'consume', start + 1500, 4)).remaining).toBe(5);
    for (const backMs of [600, 1400, 1e7]) {
      // Back in the earlier window: the previous window weighs in full (2 + 4), never more.
      expect((await at(d, key, policy, 'peek', start + 1500 - backMs)).remaining).toBe(4);
    }
  });
});

/**
 * The TTL (ms) each key was given by the commands Redis ran while `run` ran: the PX of a
 * SET, or a PEXPIRE, read from MONITOR, so a TTL is checked exactly, not as the PTTL that
 * is left some time later.
 */
async function ttlsWritten(run: () => Promise<unknown>): Promise<Map<string, number>> {
  const monitor = await redis.monitor();
  const ttls = new Map<string, number>();
  const marker = `end-of-run-${fresh()}`;
  const seen = new Promise<void>((done) => {
    monitor.on('monitor', (_time: string, args: string[]) => {
      const [command, key] = [args[0]?.toUpperCase(), args[1] as string];
      if (command === 'SET' && args[3]?.toUpperCase() === 'PX') ttls.set(key, Number(args[4]));
      if (command === 'PEXPIRE') ttls.set(key, Number(args[2]));
      if (command === 'ECHO' && key === marker) done();
    });
  });
  try {
    await run();
    await redis.echo(marker);
    await seen;
  } finally {
    monitor.disconnect();
  }
  return ttls;
}

describe('expiry on Redis (Redis TIME)', () => {
  it('sets a TTL of ceil(ms to full) + 1 on every written key (a sliding log: + an eighth of its window)', async () => {
    const p = fresh();
    const entries: StoreEntry[] = ALL_ALGORITHMS.map((algorithm) => ({
      key: `${p}:{ttl}:${algorithm}`,
      policy: makePolicy(algorithm, 10, 60_000),
      cost: 4,
    }));
    let verdicts: StoreVerdict[] = [];
    const ttls = await ttlsWritten(async () => {
      verdicts = await evalDecide(redis, entries, 'consume');
    });
    expect([...ttls.keys()].sort()).toEqual(entries.map((e) => e.key).sort());
    for (let i = 0; i < entries.length; i++) {
      const slack = entries[i]!.policy.algorithm === 'sliding-log' ? Math.ceil(60_000 / 8) : 0;
      // The reply's resetMs is the charged time to full rounded up to a whole ms.
      const expected = verdicts[i]!.resetMs + 1 + slack;
      expect(ttls.get(entries[i]!.key), entries[i]!.policy.algorithm).toBe(expected);
      const pttl = await redis.pttl(entries[i]!.key);
      expect(pttl).toBeGreaterThan(0);
      expect(pttl).toBeLessThanOrEqual(expected);
    }
  });

  it('keeps keys at least 600000 ms when the time is explicit', async () => {
    const key = `${fresh()}:{ttl}:x`;
    const ttls = await ttlsWritten(() =>
      evalDecide(redis, [{ key, policy: makePolicy('gcra', 10, 1000), cost: 1 }], 'consume', T0),
    );
    expect(ttls.get(key)).toBe(600_000);
  });

  it('sets the slot a replayed decision takes a TTL of ceil(ms to its expiry) + 1, at least 600000 ms when the time is explicit', async () => {
    const policy = makePolicy('concurrency', 2, 1000);
    for (const nowMs of [undefined, T0]) {
      const p = fresh();
      const key = `${p}:{replay}:in-flight`;
      const request = { key: `${p}:{replay}:req`, ttlMs: 60_000 };
      const take = (slotId: string): StoreEntry[] => [{ key, policy, cost: 1, slotId }];
      expect((await evalDecide(redis, take('a'), 'consume', nowMs, request))[0]?.allowed).toBe(true);
      let verdicts: StoreVerdict[] = [];
      const ttls = await ttlsWritten(async () => {
        verdicts = await evalDecide(redis, take('b'), 'consume', nowMs, request);
      });
      expect(verdicts[0]).toMatchObject({ allowed: true, remaining: 0 });
      expect(ttls.get(key)).toBe(nowMs === undefined ? verdicts[0]!.resetMs + 1 : 600_000);
    }
  });

  it('lets idle keys vanish, and a vanished key is fresh and full', async () => {
    const p = fresh();
    const entries: StoreEntry[] = ALL_ALGORITHMS.map((algorithm) => ({
      key: `${p}:{gone}:${algorithm}`,
      policy: makePolicy(algorithm, 2, 40),
      cost: 2,
    }));
    expect((await evalDecide(redis, entries, 'consume')).every((v) => v.allowed)).toBe(true);
    expect(await redis.exists(...entries.map((e) => e.key))).toBe(entries.length);
    await new Promise((resolve) => setTimeout(resolve, 130));
    expect(await redis.exists(...entries.map((e) => e.key))).toBe(0);
    for (const v of await evalDecide(redis, entries, 'peek')) {
      expect(v).toEqual({ allowed: true, remaining: 2, resetMs: 0, retryAfterMs: 0 });
    }
  });

  it('keeps a sliding log while it holds admitted units, refreshing the TTL once per eighth of the window', async () => {
    const key = `${fresh()}:{slide}:log`;
    const windowMs = 1000;
    const sliceMs = windowMs / 8;
    const entries: StoreEntry[] = [{ key, policy: makePolicy('sliding-log', 1000, windowMs), cost: 1 }];
    // Explicit time: a charge every 15 ms for 600 ms, from the start of an eighth of the window.
    // Written keys then get a TTL of the explicit floor (600 s) + an eighth of the window; a TTL
    // above that (`MARK_MS`), set after each charge, shows whether the next charge refreshed it.
    const TTL_MS = 600_000 + sliceMs;
    const MARK_MS = 2 * TTL_MS;
    const start = Math.ceil(T0 / sliceMs) * sliceMs;
    let lastAt = start;
    let admitted = 0;
    for (let atMs = start; atMs - start < 600; atMs += 15) {
      const [v] = await evalDecide(redis, entries, 'consume', atMs);
      // Every unit is still in the window (less than 1000 ms old) and 1000 are allowed: each
      // charge is admitted and counted once.
      expect(v).toMatchObject({ allowed: true, remaining: 1000 - admitted - 1 });
      // The first write sets the TTL; an append sets it again only in a later eighth than the
      // newest record's.
      const refreshed = admitted === 0 || Math.floor(atMs / sliceMs) !== Math.floor(lastAt / sliceMs);
      const ttlMs = await redis.pttl(key);
      if (refreshed)
        expect(ttlMs, `charge ${admitted} at +${atMs - start} ms`).toBeLessThanOrEqual(TTL_MS + 1);
      else expect(ttlMs, `charge ${admitted} at +${atMs - start} ms`).toBeGreaterThan(TTL_MS + 1);
      admitted++;
      lastAt = atMs;
      expect(await redis.pexpire(key, MARK_MS)).toBe(1);
    }
    expect(admitted).toBeGreaterThanOrEqual(2);
    // More than 1000 ms after the first unit and 700 ms after the last: the first has left the
    // window, the last is still in it.
    const [v] = await evalDecide(redis, entries, 'peek', lastAt + 700);
    expect(v?.remaining).toBeGreaterThan(1000 - admitted);
    expect(v?.remaining).toBeLessThan(1000);
  });

  it('a deny writes nothing and sets no TTL', async () => {
    const p = fresh();
    const a: StoreEntry = { key: `${p}:{d}:a`, policy: makePolicy('token-bucket', 5, 1000), cost: 1 };
    const b: StoreEntry = { key: `${p}:{d}:b`, policy: makePolicy('fixed-window', 1, 1000), cost: 2 };
    const [va, vb] = await evalDecide(redis, [a, b], 'consume');
    expect(va?.allowed).toBe(true);
    expect(vb?.allowed).toBe(false);
    expect(vb?.retryAfterMs).toBe(-1);
    expect(await redis.exists(a.key, b.key)).toBe(0);
  });
});

describe('Redis memory per key', () => {
  // A redis-server of its own: the figures are for a server that has held nothing else
  // (after the large strings of the tests above, a token bucket on k4 measured 96 B, not 80).
  let own: RedisProcess;
  let ownRedis: Redis;
  beforeAll(async () => {
    own = await startRedis();
    ownRedis = new Redis(own.port, '127.0.0.1', { maxRetriesPerRequest: 1 });
  });
  afterAll(async () => {
    ownRedis?.disconnect();
    await own?.stop();
  });

  it('is what lua/README.md documents: one short string per key for every algorithm but the sliding log', async () => {
    const redis = ownRedis;
    // lua/README.md, "Memory per key": bytes after one request (limit 100 per minute) on the
    // 2-character key k4 and the 22-character key sluice:{user-00042}:p1.
    const documented: Record<RateAlgorithm, [number, number]> = {
      gcra: [80, 104],
      'token-bucket': [80, 104],
      'sliding-window': [80, 104],
      'fixed-window': [80, 104],
      'sliding-log': [112, 136],
    };
    const keys = ['k4', 'sluice:{user-00042}:p1'] as const;
    const usage = async (algorithm: Algorithm, requests: number): Promise<number[]> => {
      const policy = makePolicy(algorithm, 100, 60_000);
      const bytes: number[] = [];
      for (const key of keys) {
        await redis.del(key);
        for (let i = 0; i < requests; i++) await evalDecide(redis, [{ key, policy, cost: 1 }], 'consume');
        bytes.push((await redis.memory('USAGE', key)) as number);
      }
      return bytes;
    };
    const report: Record<string, number[]> = {};
    for (const algorithm of ALL_ALGORITHMS) {
      report[algorithm] = await usage(algorithm, 1);
      // GCRA keeps two numbers ("g<used>|<tsMs>", one short string): one arrival time
      // stopped being exact above about 1000/s (lua/gcra.lua).
      if (algorithm === 'gcra') expect(await redis.get('k4')).toMatch(/^g1\|\d+(\.\d+)?$/);
    }
    // A second request refills a fraction of a token: "96 B once tokens carry a fraction".
    report['token-bucket with a fraction'] = await usage('token-bucket', 2);
    console.log('MEMORY USAGE bytes (k4, sluice:{user-00042}:p1):', JSON.stringify(report));
    for (const algorithm of ALL_ALGORITHMS)
      expect(report[algorithm], algorithm).toEqual(documented[algorithm]);
    expect(report['token-bucket with a fraction']).toEqual([96, 120]);
  });
});
