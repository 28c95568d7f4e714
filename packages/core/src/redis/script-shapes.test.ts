/**
 * The decide script's shapes: one script per algorithm beside the full one, built from the same
 * lua/ files. Each holds its algorithm alone, answers exactly as the full script over random
 * histories, refuses a policy of another algorithm, and is the one `RedisStore` sends for a call
 * whose policies share its algorithm (a mix goes to the full script).
 */
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisProcess, startRedis } from '../../../../test/support/redis-server.js';
import { ALGORITHM_LIST } from '../algorithms/index.js';
import { buildKey } from '../keys/build-keys.js';
import { definePolicy } from '../policy/define-policy.js';
import { RedisStore } from '../stores/redis-store.js';
import type { CompiledPolicy, StoreEntry } from '../types.js';
import {
  DECIDE_SCRIPT,
  DECIDE_SCRIPTS,
  DECIDE_SCRIPTS_OF_ALGORITHM,
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

describe('decide script shapes', () => {
  it('has one script per registered algorithm, holding its algorithm file alone, with the SHA1 Redis computes', async () => {
    expect(Object.keys(DECIDE_SCRIPTS_OF_ALGORITHM).sort()).toEqual(ALGORITHM_LIST.map((m) => m.name).sort());
    expect(DECIDE_SCRIPTS).toHaveLength(ALGORITHM_LIST.length + 1);
    for (const module of ALGORITHM_LIST) {
      const script = DECIDE_SCRIPTS_OF_ALGORITHM[module.name]!;
      expect(await redis.script('LOAD', script.source)).toBe(script.sha1);
      for (const other of ALGORITHM_LIST) {
        const header = `-- ==== lua/${other.lua.file} ====`;
        expect(script.source.includes(header)).toBe(other === module);
        expect(DECIDE_SCRIPT.source.includes(header)).toBe(true);
      }
      expect(script.source.length).toBeLessThan(DECIDE_SCRIPT.source.length);
    }
  });

  it("refuses a policy of another algorithm with the full script's error for an unknown one", async () => {
    const gcra = policyOf('gcra');
    const entries: StoreEntry[] = [{ key: buildKey('sh', 'x', gcra), policy: gcra, cost: 1 }];
    const keys = encodeScriptKeys(entries);
    const args = encodeScriptArgs(entries, 'consume', T0);
    const script = DECIDE_SCRIPTS_OF_ALGORITHM['token-bucket']!;
    await expect(redis.eval(script.source, keys.length, ...keys, ...args)).rejects.toThrow(
      /unknown algorithm in policy 1/,
    );
  });

  it('answers as the full script over random histories, every algorithm, short and full form', async () => {
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
          const shape = DECIDE_SCRIPTS_OF_ALGORITHM[algorithm]!;
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

  it("sends a call of one algorithm's policies to that algorithm's script, a mix to the full one", async () => {
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
    const tb = DECIDE_SCRIPTS_OF_ALGORITHM['token-bucket']!.sha1;
    expect(sent).toEqual([tb, tb, DECIDE_SCRIPT.sha1]);
    await store.close();
  });
});
