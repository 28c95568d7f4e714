import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisProcess, startRedis } from '../../../../test/support/redis-server.js';
import { makePolicy } from '../algorithms/testing.test-support.js';
import type { CompiledPolicy, StoreEntry } from '../types.js';
import { DECIDE_SCRIPT, ScriptCall } from './script.js';
import { fullFormArgs } from './script.test-support.js';

let server: RedisProcess;
let redis: Redis;
let run = 0;
/** A key prefix no other run used. */
const fresh = (): string => `sf${++run}`;
const T0 = 1_764_400_000_000.25;

beforeAll(async () => {
  server = await startRedis();
  redis = new Redis(server.port, '127.0.0.1', { maxRetriesPerRequest: 1 });
  await redis.script('LOAD', DECIDE_SCRIPT.source);
});

afterAll(async () => {
  redis?.disconnect();
  await server?.stop();
});

/** A policy with a ban: blocks for blockMs after a denial. */
function banned(policy: CompiledPolicy, blockMs: number): CompiledPolicy {
  return { ...policy, ban: { blockMs, violations: 0, violationWindowMs: 0, escalatedBlockMs: blockMs } };
}

/** One entry per policy under one identity's prefix, one unit each. */
const unitEach = (prefix: string, policies: readonly CompiledPolicy[]): StoreEntry[] =>
  policies.map((policy) => ({ key: `${prefix}:${policy.name}`, policy, cost: 1 }));

/** Every stored value under the prefix's keys, by key with the prefix cut off, and their TTLs (ms). */
async function stateOf(prefix: string): Promise<{ values: Record<string, string | null>; ttlsMs: number[] }> {
  const keys = (await redis.keys(`${prefix}:*`)).sort();
  const values: Record<string, string | null> = {};
  const ttlsMs: number[] = [];
  for (const key of keys) {
    values[key.slice(prefix.length)] = await redis.get(key);
    ttlsMs.push(await redis.pttl(key));
  }
  return { values, ttlsMs };
}

describe('the short form of several policies', () => {
  it('sends a consume of one unit of each policy as one item, the policy indices joined by +', () => {
    const a = makePolicy('token-bucket', 3, 1000, 'a');
    const b = makePolicy('gcra', 5, 1000, 'b');
    const call = new ScriptCall('');
    call.add(unitEach('x', [a, b]), 'consume');
    call.add(unitEach('y', [b, a]), 'consume');
    call.add(unitEach('z', [b]), 'consume');
    // A cost, a peek or a record takes the full form.
    call.add(
      [
        { key: 'w:a', policy: a, cost: 1 },
        { key: 'w:b', policy: b, cost: 2 },
      ],
      'consume',
    );
    call.add(unitEach('v', [a, b]), 'peek');
    expect(call.args().slice(12)).toEqual([
      '1+2',
      '2+1',
      '2',
      ...['consume', '', '2', '1', '1', '2', '2'],
      ...['peek', '', '2', '1', '1', '2', '1'],
    ]);
    expect(call.keys).toEqual(['x:a', 'x:b', 'y:b', 'y:a', 'z:b', 'w:a', 'w:b', 'v:a', 'v:b']);
    expect(fullFormArgs(['', '2', ...call.args().slice(2, 12), '2+1'])).toEqual([
      ...['', '2', ...call.args().slice(2, 12)],
      ...['consume', '', '2', '2', '1', '1', '1'],
    ]);
  });

  it('decides, charges and bans exactly as the full form, shadow and ban policies included', async () => {
    const policies = [
      makePolicy('token-bucket', 6, 1000, 'tb'),
      { ...makePolicy('fixed-window', 2, 60_000, 'fw'), shadow: true },
      banned(makePolicy('sliding-window', 3, 60_000, 'sw'), 5000),
      makePolicy('gcra', 5, 1000, 'g'),
      makePolicy('sliding-log', 6, 60_000, 'sl'),
    ];
    const short = fresh();
    const full = fresh();
    // One call of six short-form decisions of every policy on one identity, then the same
    // decisions one call each in the full form: same replies, same state, same TTLs.
    const call = new ScriptCall(String(T0));
    for (let i = 0; i < 6; i++) call.add(unitEach(short, policies), 'consume');
    expect(call.args().slice(27)).toEqual(Array(6).fill('1+2+3+4+5'));
    const fromShort = (await redis.evalsha(
      DECIDE_SCRIPT.sha1,
      call.keys.length,
      ...call.keys,
      ...call.args(),
    )) as number[];
    const fromFull: number[] = [];
    for (let i = 0; i < 6; i++) {
      const one = new ScriptCall(String(T0));
      one.add(unitEach(full, policies), 'consume');
      const reply = await redis.evalsha(
        DECIDE_SCRIPT.sha1,
        one.keys.length,
        ...one.keys,
        ...fullFormArgs(one.args()),
      );
      fromFull.push(...(reply as number[]));
    }
    expect(fromShort).toEqual(fromFull);
    // The fixed window (shadow) denies from the third on (the enforced ones still charged), the
    // sliding window from the fourth: then nothing is charged and its ban (allowed 2) holds.
    expect(fromShort.filter((_, k) => k % 4 === 0)).toEqual([
      ...[1, 1, 1, 1, 1],
      ...[1, 1, 1, 1, 1],
      ...[1, 0, 1, 1, 1],
      ...[1, 0, 2, 1, 1],
      ...[1, 0, 2, 1, 1],
      ...[1, 0, 2, 1, 1],
    ]);
    // Same state; the same TTLs but for the ms of wall clock between the writes (an explicit time
    // keeps a TTL of at least 600 s; a sliding log adds an eighth of its window).
    const [a, b] = [await stateOf(short), await stateOf(full)];
    expect(a.values).toEqual(b.values);
    expect(Object.keys(a.values)).toEqual([':fw', ':g', ':sl', ':sw', ':sw:~ban', ':tb']);
    const driftsMs = a.ttlsMs.map((ttlMs, i) => Math.abs(ttlMs - (b.ttlsMs[i] as number)));
    expect(Math.max(...driftsMs)).toBeLessThan(1000);
  });

  it('refuses an item naming a policy index the call has not', async () => {
    const policyArgs = ['gcra', '3', '1000', '333.3333333333333', '0'];
    for (const item of ['1+2', '1+', '+1', '1++1']) {
      await expect(
        redis.evalsha(DECIDE_SCRIPT.sha1, 2, `${fresh()}:a`, `${fresh()}:b`, '', '1', ...policyArgs, item),
      ).rejects.toThrow(/unknown policy index/);
    }
  });
});

describe('ScriptCall.add', () => {
  it('adds nothing of a decision it refuses: a lease take with a record, a request key already taken', () => {
    const a = makePolicy('token-bucket', 3, 1000, 'a');
    const call = new ScriptCall('');
    call.add(unitEach('x', [a]), 'consume');
    const before = { keys: [...call.keys], args: call.args(), replyItems: call.replyItems };
    expect(() => call.add([{ key: 'y:a', policy: a, cost: 2, leastCost: 1 }], 'consume', 'y:r', 100)).toThrow(
      /lease take cannot have a request record/,
    );
    expect(() => call.add(unitEach('z', [a]), 'consume', 'z:a', 100)).toThrow(/requestKey/);
    expect(() => call.add(unitEach('w', [banned(a, 1000)]), 'consume', 'w:a:~ban', 100)).toThrow(
      /requestKey/,
    );
    expect({ keys: call.keys, args: call.args(), replyItems: call.replyItems }).toEqual(before);
  });
});
