import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisProcess, startRedis } from '../../../../test/support/redis-server.js';
import type { Algorithm, CompiledPolicy, StoreEntry } from '../types.js';
import { DECIDE_SCRIPT, decodeScriptReply, encodeScriptArgs } from './script.js';

function policy(algorithm: Algorithm, limit: number, windowMs: number): CompiledPolicy {
  return {
    name: algorithm,
    algorithm,
    limit,
    windowMs,
    intervalMs: windowMs / limit,
    cost: 1,
    failMode: 'closed',
    shadow: false,
    scope: 'identity',
  };
}

let server: RedisProcess;
let redis: Redis;

beforeAll(async () => {
  server = await startRedis();
  redis = new Redis(server.port, '127.0.0.1', { lazyConnect: false });
});

afterAll(async () => {
  redis?.disconnect();
  await server?.stop();
});

async function decide(entries: StoreEntry[], mode: 'consume' | 'peek', nowMs?: number) {
  const reply = await redis.eval(
    DECIDE_SCRIPT.source,
    entries.length,
    ...entries.map((e) => e.key),
    ...encodeScriptArgs(entries, mode, nowMs),
  );
  return decodeScriptReply(reply, entries);
}

describe('decide script', () => {
  it('has the SHA1 that SCRIPT LOAD returns', async () => {
    expect(DECIDE_SCRIPT.sha1).toMatch(/^[0-9a-f]{40}$/);
    expect(await redis.script('LOAD', DECIDE_SCRIPT.source)).toBe(DECIDE_SCRIPT.sha1);
  });

  it('admits up to the limit for every algorithm, then denies', async () => {
    for (const algorithm of [
      'token-bucket',
      'gcra',
      'sliding-window',
      'fixed-window',
      'sliding-log',
    ] as const) {
      const entry: StoreEntry = {
        key: `smoke:{a}:${algorithm}`,
        policy: policy(algorithm, 3, 60_000),
        cost: 1,
      };
      const verdicts = [];
      for (let i = 0; i < 4; i++) verdicts.push((await decide([entry], 'consume', 1_000_000 + 30_000))[0]);
      expect(verdicts.map((v) => v?.allowed)).toEqual([true, true, true, false]);
      expect(verdicts.map((v) => v?.remaining)).toEqual([2, 1, 0, 0]);
    }
  });
});
