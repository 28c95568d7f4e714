/**
 * lua/quota.lua on a real redis-server against its TypeScript twin (allocate.ts): over any
 * sequence of reports, departures and time, the same answers, and the shares held never above the
 * budget. Then its contract: Redis TIME, the key's TTL, bad arguments refused before any write.
 */
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisProcess, startRedis } from '../../../../test/support/redis-server.js';
import { ioredisTransport } from '../redis/transports/ioredis.js';
import { heldShares, leaveQuota, type QuotaTableState, reportQuota } from './allocate.js';
import { clientName, quotaOps } from './quota-ops.test-support.js';
import { encodeQuotaArgs, MemoryQuotaTable, QUOTA_SCRIPT, RedisQuotaTable } from './quota-table.js';

const START_MS = 1_764_400_000_000;
let server: RedisProcess;
let redis: Redis;

beforeAll(async () => {
  server = await startRedis();
  redis = new Redis(server.port, '127.0.0.1');
});
afterAll(async () => {
  redis.disconnect();
  await server.stop();
});

/** The held shares of the bucket in Redis as the script stores them, at `nowMs`. */
async function redisHeld(key: string, nowMs: number): Promise<number> {
  const fields = await redis.hgetall(key);
  let held = 0;
  for (const value of Object.values(fields)) {
    const [share, , expiresAt] = value.split('|');
    if (Number(expiresAt) > nowMs) held += Number(share);
  }
  return held;
}

describe('lua/quota.lua', () => {
  it('answers as allocate.ts does and never holds more than the budget', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 5000 }), quotaOps(4, 10_000, 30), async (budget, ops) => {
        run += 1;
        const key = `quota-test:{run-${run}}`;
        let nowMs = START_MS;
        const twin: QuotaTableState = new Map();
        const table = new RedisQuotaTable(ioredisTransport(redis), () => nowMs);
        const memory = new MemoryQuotaTable(() => nowMs);
        for (const op of ops) {
          if (op.kind === 'wait') {
            nowMs += op.ms;
            continue;
          }
          const clientId = clientName(op.client);
          const report = { clientId, budget, demand: op.kind === 'report' ? op.demand : 0, ttlMs: 1 };
          const ours =
            op.kind === 'leave'
              ? await table.leave(key, clientId)
              : await table.report(key, { ...report, ttlMs: op.ttlMs });
          const theirs =
            op.kind === 'leave'
              ? leaveQuota(twin, clientId, nowMs)
              : reportQuota(twin, { ...report, ttlMs: op.ttlMs }, nowMs);
          const memoryAnswer =
            op.kind === 'leave'
              ? memory.leaveNow(key, clientId)
              : memory.reportNow(key, { ...report, ttlMs: op.ttlMs });
          expect(memoryAnswer).toEqual(theirs);
          expect(ours).toEqual(theirs);
          expect(await redisHeld(key, nowMs)).toBeLessThanOrEqual(budget);
        }
        expect(await redisHeld(key, nowMs)).toBe(heldShares(twin, nowMs));
      }),
      { numRuns: 60 },
    );
  });

  it('on Redis TIME: a report holds its share for its TTL, and the key expires after the last', async () => {
    const table = new RedisQuotaTable(ioredisTransport(redis));
    const answer = await table.report('quota-test:{time}', {
      clientId: 'a',
      budget: 10,
      demand: 3,
      ttlMs: 2000,
    });
    expect(answer).toEqual({ share: 10, liveClients: 1, demandSum: 3, heldSum: 10 });
    const ttl = await redis.pttl('quota-test:{time}');
    expect(ttl).toBeGreaterThan(1500);
    expect(ttl).toBeLessThanOrEqual(2001);
  });

  it('refuses bad arguments before it reads or writes', async () => {
    const run = (args: string[]) => redis.eval(QUOTA_SCRIPT.source, 1, 'quota-test:{bad}', ...args);
    await expect(run(['', 'take', 'a', '1', '1', '1'])).rejects.toThrow(/mode report or leave/);
    await expect(run(['', 'report', '', '1', '1', '1'])).rejects.toThrow(/client id/);
    await expect(run(['', 'report', 'a', '-1', '1', '1'])).rejects.toThrow(/budget/);
    await expect(run(['', 'report', 'a', '1', '0.5', '1'])).rejects.toThrow(/demand/);
    await expect(run(['', 'report', 'a', '1', '1', '0'])).rejects.toThrow(/ttlMs/);
    await expect(run(['x', 'report', 'a', '1', '1', '1'])).rejects.toThrow(/nowMs/);
    expect(await redis.exists('quota-test:{bad}')).toBe(0);
    expect(() => encodeQuotaArgs('report', { clientId: 'a', budget: 1, demand: 1, ttlMs: -1 })).toThrow(
      /ttlMs/,
    );
  });
});
