/**
 * The decide script's shapes: per algorithm (and for every algorithm) a full script and a plain one,
 * built from the same lua/ files. Each holds its algorithm alone, answers exactly as the full script
 * over random histories, refuses a policy of another algorithm and a feature it does not carry, and
 * is the one `RedisStore` sends for a call whose policies share its algorithm and whose features it
 * carries (a mix goes to a script of every algorithm).
 */
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisProcess, startRedis } from '../../../../test/support/redis-server.js';
import { assertDeclared, cutFeatures, dropUnused } from '../../scripts/lua-shapes.mjs';
import { ALGORITHM_LIST } from '../algorithms/index.js';
import { buildKey } from '../keys/build-keys.js';
import { definePolicy } from '../policy/define-policy.js';
import { RedisStore } from '../stores/redis-store.js';
import type { CompiledPolicy, StoreEntry } from '../types.js';
import {
  DECIDE_FEATURE,
  DECIDE_SCRIPT,
  DECIDE_SCRIPTS,
  type DecideShape,
  decideScriptFor,
  decideScriptOf,
  encodeScriptArgs,
  encodeScriptKeys,
} from './script.js';
import { defineTransport } from './transport.js';

let server: RedisProcess;
let redis: Redis;

beforeAll(async () => {
  server = await startRedis();
  redis = new Redis(server.port, '127.0.0.1', { maxRetriesPerRequest: 1 });
});

afterAll(async () => {
  redis?.disconnect();
  await server?.stop();
});

const T0 = 1_800_000_000_000;
const policyOf = (algorithm: string, limit = 5): CompiledPolicy =>
  algorithm === 'concurrency'
    ? definePolicy({ name: `p-${algorithm}`, algorithm: 'concurrency', limit, leaseMs: '10s' })
    : definePolicy({ name: `p-${algorithm}`, algorithm: algorithm as 'gcra', limit, window: '10s' });
const RATE_ALGORITHMS = ALGORITHM_LIST.map((m) => m.name).filter((name) => name !== 'concurrency');
/** A shape by name ('token-bucket', 'token-bucket/plain', 'all', ...). */
const shapeNamed = (name: string): DecideShape => DECIDE_SCRIPTS.find((shape) => shape.name === name)!;

describe('decide script shapes', () => {
  it('has a full and a plain script per registered algorithm and for every algorithm, each with the SHA1 Redis computes', async () => {
    expect(DECIDE_SCRIPTS.map((shape) => shape.name)).toEqual(
      ['all', ...ALGORITHM_LIST.map((m) => m.name)].flatMap((name) => [name, `${name}/plain`]),
    );
    expect(DECIDE_SCRIPTS[0]!.sha1).toBe(DECIDE_SCRIPT.sha1);
    for (const shape of DECIDE_SCRIPTS) expect(await redis.script('LOAD', shape.source)).toBe(shape.sha1);
    for (const module of ALGORITHM_LIST) {
      for (const name of [module.name, `${module.name}/plain`]) {
        const script = shapeNamed(name);
        for (const other of ALGORITHM_LIST) {
          const header = `-- ==== lua/${other.lua.file} ====`;
          expect(script.source.includes(header)).toBe(other === module);
          expect(DECIDE_SCRIPT.source.includes(header)).toBe(true);
        }
        expect(script.source.length).toBeLessThan(DECIDE_SCRIPT.source.length);
      }
      expect(shapeNamed(`${module.name}/plain`).source.length).toBeLessThan(
        shapeNamed(module.name).source.length,
      );
    }
  });

  it('leaves the ban, shadow, wait, lease and request-record code out of a plain script', () => {
    const plain = shapeNamed('token-bucket/plain');
    for (const text of [
      'B.read',
      'B.reply',
      'recordKey',
      'lease[',
      'waits[',
      'turns[',
      '.shadow',
      'tagged3',
      'slots[',
    ])
      expect(plain.source.includes(text), text).toBe(false);
    for (const text of ['B.read', 'recordKey', 'lease[', 'waits[', '.shadow', 'slots['])
      expect(DECIDE_SCRIPT.source.includes(text), text).toBe(true);
    expect(shapeNamed('concurrency/plain').source.includes('slots[')).toBe(true);
  });

  it("refuses a policy of another algorithm with the full script's error for an unknown one", async () => {
    const gcra = policyOf('gcra');
    const entries: StoreEntry[] = [{ key: buildKey('sh', 'x', gcra), policy: gcra, cost: 1 }];
    const keys = encodeScriptKeys(entries);
    const args = encodeScriptArgs(entries, 'consume', T0);
    for (const name of ['token-bucket', 'token-bucket/plain']) {
      await expect(redis.eval(shapeNamed(name).source, keys.length, ...keys, ...args)).rejects.toThrow(
        /unknown algorithm in policy 1/,
      );
    }
  });

  it('a plain script refuses what it does not carry: a shadow policy, a ban, a request record, a wait, a lease take', async () => {
    const plain = shapeNamed('token-bucket/plain');
    const run = (entries: StoreEntry[], requestTtlMs?: number) => {
      const keys = encodeScriptKeys(entries, requestTtlMs === undefined ? undefined : 'sh:{r}:record');
      const args = encodeScriptArgs(entries, 'consume', T0, requestTtlMs);
      return redis.eval(plain.source, keys.length, ...keys, ...args);
    };
    const bucket = policyOf('token-bucket');
    const shadow = definePolicy({ name: 'p-shadow', limit: 5, window: '10s', shadow: true });
    const banned = definePolicy({ name: 'p-ban', limit: 5, window: '10s', ban: { blockMs: 1000 } });
    const entry = (policy: CompiledPolicy, more: Partial<StoreEntry> = {}): StoreEntry => ({
      key: buildKey('sh', '{r}', policy),
      policy,
      cost: 1,
      ...more,
    });
    await expect(run([entry(shadow)])).rejects.toThrow(/takes no shadow policy/);
    await expect(run([entry(banned)])).rejects.toThrow(/takes no ban/);
    await expect(run([entry(bucket)], 1000)).rejects.toThrow(/takes no request record/);
    await expect(run([entry(bucket, { maxWaitMs: 100 })])).rejects.toThrow(/cost must be a positive number/);
    await expect(run([entry(bucket, { cost: 2, leastCost: 1 })])).rejects.toThrow(
      /cost must be a positive number/,
    );
    expect(await run([entry(bucket, { cost: 2 })])).toEqual([1, 3, 4000, 0]);
  });

  it('picks the smallest shape that carries what a call uses', () => {
    const bucket = policyOf('token-bucket');
    const shadow = definePolicy({ name: 'p-shadow', limit: 5, window: '10s', shadow: true });
    const window = policyOf('fixed-window');
    const slots = policyOf('concurrency');
    const entry = (policy: CompiledPolicy, more: Partial<StoreEntry> = {}): StoreEntry => ({
      key: buildKey('sh', 'u', policy),
      policy,
      cost: 1,
      ...more,
    });
    const nameOf = (script: unknown) => (script as DecideShape).name;
    expect(nameOf(decideScriptFor([entry(bucket)]))).toBe('token-bucket/plain');
    expect(nameOf(decideScriptFor([entry(bucket, { cost: 3 })], 'peek'))).toBe('token-bucket/plain');
    expect(nameOf(decideScriptFor([entry(bucket)], 'consume', 1000))).toBe('token-bucket');
    expect(nameOf(decideScriptFor([entry(bucket, { maxWaitMs: 50 })]))).toBe('token-bucket');
    expect(nameOf(decideScriptFor([entry(bucket, { cost: 2, leastCost: 1 })]))).toBe('token-bucket');
    expect(nameOf(decideScriptFor([entry(bucket), entry(shadow)]))).toBe('token-bucket');
    expect(nameOf(decideScriptFor([entry(bucket), entry(window)]))).toBe('all/plain');
    expect(nameOf(decideScriptFor([entry(shadow), entry(window)]))).toBe('all');
    expect(nameOf(decideScriptFor([entry(slots, { slotId: 's1' })]))).toBe('concurrency/plain');
    expect(nameOf(decideScriptOf('token-bucket', DECIDE_FEATURE.bans))).toBe('token-bucket');
    expect(nameOf(decideScriptOf('no-such-algorithm', 0))).toBe('all/plain');
  });

  it('a plain script answers as the full script over random histories, every algorithm, short and full form', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...RATE_ALGORITHMS),
        fc.array(
          fc.record({
            dt: fc.oneof(fc.constant(0), fc.integer({ min: -500, max: 3000 })),
            cost: fc.constantFrom(1, 1, 2, 3),
            mode: fc.constantFrom('consume' as const, 'consume' as const, 'peek' as const),
          }),
          { minLength: 1, maxLength: 12 },
        ),
        async (algorithm, steps) => {
          run++;
          const policy = policyOf(algorithm);
          const shape = shapeNamed(`${algorithm}/plain`);
          let now = T0;
          for (const step of steps) {
            now += step.dt;
            const replies = [];
            for (const [side, script] of [
              ['full', DECIDE_SCRIPT],
              ['shape', shape],
            ] as const) {
              const entries: StoreEntry[] = [
                { key: buildKey(`sh${run}${side}`, 'id', policy), policy, cost: step.cost },
              ];
              const keys = encodeScriptKeys(entries);
              const args = encodeScriptArgs(entries, step.mode, now);
              replies.push(await redis.eval(script.source, keys.length, ...keys, ...args));
            }
            expect(replies[1]).toEqual(replies[0]);
          }
        },
      ),
      { numRuns: 60 },
    );
  });

  it("sends a call of one algorithm's policies to that algorithm's script, a mix to one of every algorithm, a request record to a full one", async () => {
    const sent: string[] = [];
    const transport = defineTransport({
      singleSlot: false,
      evalsha: (sha1, keys, args) => {
        sent.push(sha1);
        return redis.evalsha(sha1, keys.length, ...keys, ...args);
      },
      eval: (source, keys, args) => redis.eval(source, keys.length, ...keys, ...args),
    });
    const store = new RedisStore({ transport, clock: () => T0 });
    const bucket = policyOf('token-bucket');
    const bucket2 = definePolicy({ name: 'p-bucket-2', limit: 9, window: '1m' });
    const window = policyOf('fixed-window');
    const entry = (policy: CompiledPolicy): StoreEntry => ({
      key: buildKey('route', 'u', policy),
      policy,
      cost: 1,
    });
    await store.decide([entry(bucket)], 'consume');
    await store.decide([entry(bucket), entry(bucket2)], 'consume');
    await store.decide([entry(bucket), entry(window)], 'consume');
    await store.decide([entry(bucket)], 'consume', { requestKey: 'route:{u}:req', requestTtlMs: 1000 });
    const tb = shapeNamed('token-bucket/plain').sha1;
    expect(sent).toEqual([tb, tb, shapeNamed('all/plain').sha1, shapeNamed('token-bucket').sha1]);
    await store.close();
  });

  it('cuts feature sections, drops what nothing names, and refuses a shape that uses a local its cut removed', () => {
    const text = [
      'local a = 1',
      '-- #if bans',
      'local b = 2',
      '-- #else',
      'local b = 3',
      '-- #if not shadow',
      'local c = 4',
      '-- #end',
      '-- #end',
      'return a + b',
    ].join('\n');
    expect(cutFeatures(text, ['bans'], 'x.lua')).toBe('local a = 1\nlocal b = 2\nreturn a + b');
    expect(cutFeatures(text, [], 'x.lua')).toBe('local a = 1\nlocal b = 3\nlocal c = 4\nreturn a + b');
    expect(() => cutFeatures('-- #if nonsense\n-- #end', [], 'x.lua')).toThrow(/x.lua:1: unknown feature/);
    expect(() => cutFeatures('-- #if bans\n', [], 'x.lua')).toThrow(/#if without #end/);
    expect(() => cutFeatures('-- #end\n', [], 'x.lua')).toThrow(/#end without #if/);
    const chunk = [
      'local find, sub = string.find, string.sub',
      '-- helper',
      'local function unused(x)',
      "  return sub(x, 1, 1) .. 'unused'",
      'end',
      'local function used(x)',
      '  return find(x, "a")',
      'end',
      'return used(ARGV[1])',
    ].join('\n');
    expect(dropUnused(chunk)).toBe(
      'local find = string.find\nlocal function used(x)\n  return find(x, "a")\nend\nreturn used(ARGV[1])',
    );
    const full = 'local slots = false\nlocal function f()\n  return slots\nend\nreturn f()';
    expect(() =>
      assertDeclared('local function f()\n  return slots\nend\nreturn f()', full, 'x/plain'),
    ).toThrow(/x\/plain uses slots/);
    expect(() =>
      assertDeclared('local function f()\n  return policy.slots\nend\nreturn f()', full, 'y'),
    ).not.toThrow();
  });
});
