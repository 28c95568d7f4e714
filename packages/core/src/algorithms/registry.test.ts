/**
 * The algorithm registry, the embedded decide script and the TypeScript agree: every registered
 * algorithm has its Lua file, embedded in registry order, registering its name and setting
 * exactly the result fields its module declares; the script and the store checks accept exactly
 * the registry's names and apply each module's store rules alike; the `Algorithm` type and
 * `definePolicy` accept exactly the registry's names; each state codec round-trips.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest';
import { type RedisProcess, startRedis } from '../../../../test/support/redis-server.js';
import * as core from '../adapter.js';
import { definePolicy } from '../policy/define-policy.js';
import { DECIDE_SCRIPT, encodeScriptArgs, encodeScriptKeys } from '../redis/script.js';
import type { CompiledPolicy, Algorithm as PublicAlgorithm, StoreEntry } from '../types.js';
import { LUA_COMMON_RESULT_FIELDS, STATE_NUMBERS_MAX } from './module.js';
import { ALGORITHM_LIST, ALGORITHM_NAMES, ALGORITHMS, type Algorithm, isAlgorithm } from './registry.js';
import {
  ALL_ALGORITHMS,
  costArb,
  makePolicy,
  policyArb,
  startTimeArb,
  timeStepArb,
} from './testing.test-support.js';
import { assertValidEntries } from './validate.js';

const luaDir = fileURLToPath(new URL('../../../../lua/', import.meta.url));
const lua = (file: string): string => readFileSync(join(luaDir, file), 'utf8');
/** The fields of `r` a Lua file assigns (`r.a = ...`, `r.a, r.b = ...`) and those it reads anywhere. */
function resultFields(source: string): { assigned: Set<string>; used: Set<string> } {
  const assigned = new Set<string>();
  for (const [, targets] of source.matchAll(/^\s*((?:r\.\w+\s*,\s*)*r\.\w+)\s*=(?!=)/gm)) {
    for (const [, field] of (targets as string).matchAll(/r\.(\w+)/g)) assigned.add(field as string);
  }
  const used = new Set([...source.matchAll(/\br\.(\w+)/g)].map((m) => m[1] as string));
  return { assigned, used };
}

/** A policy, a cost it takes and a step of time. */
const caseArb = (algorithm: Algorithm) =>
  policyArb(algorithm, true).chain((policy) =>
    fc.record({
      policy: fc.constant(policy),
      cost: costArb(policy),
      stepMs: timeStepArb(policy.windowMs, true),
    }),
  );

describe('the algorithm registry', () => {
  it('names each algorithm once, in one order, for the type, the list and the map', () => {
    expect(new Set(ALGORITHM_NAMES).size).toBe(ALGORITHM_NAMES.length);
    expect(ALGORITHM_LIST.map((m) => m.name)).toEqual(ALGORITHM_NAMES);
    expect(Object.keys(ALGORITHMS)).toEqual(ALGORITHM_NAMES);
    for (const name of ALGORITHM_NAMES) expect(ALGORITHMS[name].name).toBe(name);
    expect(core.ALGORITHM_NAMES).toBe(ALGORITHM_NAMES);
    expectTypeOf<PublicAlgorithm>().toEqualTypeOf<Algorithm>();
    expectTypeOf<Algorithm>().toEqualTypeOf<(typeof ALGORITHM_LIST)[number]['name']>();
  });

  it('definePolicy and the store checks accept exactly the registered names', () => {
    for (const algorithm of ALGORITHM_NAMES) {
      // A concurrency policy takes no window (its slots live `leaseMs`).
      const window = algorithm === 'concurrency' ? {} : { window: '1m' };
      expect(definePolicy({ name: 'p', algorithm, limit: 5, ...window }).algorithm).toBe(algorithm);
      expect(isAlgorithm(algorithm)).toBe(true);
    }
    for (const other of ['leaky-bucket', 'constructor', '__proto__', 'toString', 'TOKEN-BUCKET', '']) {
      expect(isAlgorithm(other)).toBe(false);
      expect(() =>
        definePolicy({ name: 'p', algorithm: other as Algorithm, limit: 5, window: '1m' }),
      ).toThrow(`"algorithm" must be one of ${ALGORITHM_NAMES.join(', ')}`);
      const policy = { ...makePolicy('gcra', 5, 1000), algorithm: other as Algorithm };
      expect(() => assertValidEntries([{ key: 'k', policy, cost: 1 }])).toThrow('unknown algorithm');
    }
  });

  it('keeps its policy rules within its store rules', () => {
    for (const { name, limits, store } of ALGORITHM_LIST) {
      if (store.wholeCosts) expect(limits.fractionalCosts, name).toBe(false);
      if (store.maxLimit !== undefined) {
        expect(limits.maxLimit?.units, name).toBeLessThanOrEqual(store.maxLimit);
      }
      if (limits.maxLimit !== undefined) expect(isAlgorithm(limits.maxLimit.instead), name).toBe(true);
    }
  });

  it('round-trips every state through its codec, within the numbers a table slot holds', () => {
    for (const module of ALGORITHM_LIST) {
      const codec = module.state;
      if (codec.kind !== 'numbers') continue;
      fc.assert(
        fc.property(caseArb(module.name), startTimeArb, fc.nat(3), ({ policy, cost, stepMs }, now, at) => {
          const params = { ...policy, cost };
          const first = module.evaluate(undefined, now, params).charge();
          const state = module.evaluate(first, now + stepMs, params).charge();
          const numbers = new Float64Array(at + STATE_NUMBERS_MAX + 1).fill(Number.NaN);
          codec.encode(state, numbers, at);
          expect(numbers[at + STATE_NUMBERS_MAX]).toBeNaN();
          expect(codec.decode(numbers, at)).toEqual(state);
        }),
        { numRuns: 50 },
      );
    }
  });
});

describe('the embedded decide script', () => {
  const source = DECIDE_SCRIPT.source;

  it("holds every registered algorithm's Lua file in registry order, and no other", () => {
    const parts = [...source.matchAll(/^-- ==== lua\/([\w.-]+) ====$/gm)].map((m) => m[1]);
    expect(parts).toEqual(['common.lua', ...ALGORITHM_LIST.map((m) => m.lua.file), 'decide.lua']);
    const own = readdirSync(luaDir).filter((f) => f.endsWith('.lua'));
    expect(own.sort()).toEqual(
      [
        'common.lua',
        'decide.lua',
        'quota.lua',
        'reset.lua',
        'settle.lua',
        'slots.lua',
        ...ALGORITHM_LIST.map((m) => m.lua.file),
      ].sort(),
    );
  });

  it.each(ALGORITHM_LIST.map((m) => [m.name, m] as const))(
    '%s: its Lua file registers its name and sets exactly the result fields its module declares',
    (name, module) => {
      const text = lua(module.lua.file);
      const registrations = [...text.matchAll(/^ALGORITHMS\['([\w-]+)'\] = /gm)].map((m) => m[1]);
      expect(registrations).toEqual([name]);
      const { assigned, used } = resultFields(text);
      expect([...assigned].sort()).toEqual([...LUA_COMMON_RESULT_FIELDS, ...module.lua.resultFields].sort());
      for (const field of used) expect(assigned, `r.${field} is read but never set`).toContain(field);
    },
  );

  it('allocates every result field up front and reads only the common ones (and reply fields) in decide.lua', () => {
    const body = /local function new_result\(\)\n {2}return \{([^}]*)\}/.exec(source)?.[1] ?? '';
    const fields = [...body.matchAll(/(\w+) = false/g)].map((m) => m[1]);
    const declared = new Set([
      ...LUA_COMMON_RESULT_FIELDS,
      ...ALGORITHM_LIST.flatMap((m) => m.lua.resultFields),
    ]);
    expect([...fields].sort()).toEqual([...declared].sort());
    const read = [...LUA_COMMON_RESULT_FIELDS, ...ALGORITHM_LIST.flatMap((m) => m.lua.replyFields ?? [])];
    for (const field of resultFields(lua('decide.lua')).used) expect(read).toContain(field);
  });
});

describe('the decide script and the store checks apply each store rule alike', () => {
  let server: RedisProcess;
  let redis: Redis;
  let run = 0;

  beforeAll(async () => {
    server = await startRedis();
    redis = new Redis(server.port, '127.0.0.1', { maxRetriesPerRequest: 1 });
  });

  afterAll(async () => {
    redis?.disconnect();
    await server?.stop();
  });

  const LIMIT = 12345;
  const COST = 7;
  /** The script's reply (or error message) for one entry of `algorithm`, with its ARGV edited by `edit`. */
  async function script(algorithm: Algorithm, edit: (arg: string) => string): Promise<string> {
    const policy = makePolicy(algorithm, LIMIT, 1000);
    const entries: StoreEntry[] = [{ key: `r${++run}:{i}:p`, policy, cost: COST }];
    const args = encodeScriptArgs(entries, 'peek', 1_764_400_000_000).map(edit);
    try {
      return JSON.stringify(await redis.eval(DECIDE_SCRIPT.source, 1, ...encodeScriptKeys(entries), ...args));
    } catch (error) {
      return (error as Error).message;
    }
  }
  /** What the store checks say of the same entry with `limit` and `cost`. */
  function store(policy: CompiledPolicy, limit: number, cost: number): string {
    try {
      assertValidEntries([{ key: 'k', policy: { ...policy, limit }, cost }]);
      return 'accepted';
    } catch (error) {
      return (error as Error).message;
    }
  }

  it('refuses a name the registry does not hold', async () => {
    expect(await script('gcra', (a) => (a === 'gcra' ? 'leaky-bucket' : a))).toMatch(/unknown algorithm/);
  });

  // Every algorithm that counts units (a concurrency entry costs one slot: concurrency-script.test.ts).
  it.each(ALL_ALGORITHMS.map((name) => [name, ALGORITHMS[name]] as const))(
    '%s: accepted by the script, fractional costs and large limits exactly as its store rules say',
    async (name, module) => {
      const policy = makePolicy(name, LIMIT, 1000);
      expect(await script(name, (a) => a)).toMatch(/^\[/);
      const fraction = await script(name, (a) => (a === String(COST) ? '7.5' : a));
      const fractionStore = store(policy, LIMIT, 7.5);
      if (module.store.wholeCosts) {
        expect(fraction).toMatch(`${name} cost must be a whole number`);
        expect(fractionStore).toMatch(`${name} "cost" must be a whole number`);
      } else {
        expect(fraction).toMatch(/^\[/);
        expect(fractionStore).toBe('accepted');
      }
      const max = module.store.maxLimit;
      const large = max === undefined ? 1e300 : 2 * max;
      const largeScript = await script(name, (a) => (a === String(LIMIT) ? String(large) : a));
      const largeStore = store(policy, large, COST);
      if (max === undefined) {
        expect(largeScript).toMatch(/^\[/);
        expect(largeStore).toBe('accepted');
      } else {
        expect(largeScript).toMatch(`${name} limit must be at most ${max}`);
        expect(largeStore).toMatch(`${name} "limit" must be at most ${max}`);
        expect(await script(name, (a) => (a === String(LIMIT) ? String(max) : a))).toMatch(/^\[/);
        expect(store(policy, max, COST)).toBe('accepted');
      }
    },
  );
});
