/**
 * A `sluice-server` killed (SIGKILL) and restarted on the same port: the assignments live in
 * Redis, so clients that name themselves (`x-sluice-quota-client`) and reconnect get their shares
 * back at their first report, and the shares held never exceed the budget.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type RawQuotaStream,
  rawQuotaStream,
} from '../../packages/server/src/quota/quota-stream.test-support.js';
import { freePort } from '../support/free-port.js';
import { type RedisProcess, startRedis } from '../support/redis-server.js';
import { configRoot, quotaConfig, startQuotaServer } from './fleet.mjs';

const API = { api: 'global' };
let redis: RedisProcess;
let config: ReturnType<typeof configRoot>;
const streams: RawQuotaStream[] = [];
const stops: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  redis = await startRedis();
  config = configRoot(quotaConfig(900));
});
afterAll(async () => {
  for (const s of streams) s.close();
  for (const stop of stops) await stop();
  await redis?.stop();
  config?.remove();
});

function open(port: number, name: string): RawQuotaStream {
  const s = rawQuotaStream(port, 'regions', name);
  streams.push(s);
  return s;
}

describe('a quota server killed and restarted', () => {
  it('gives named clients their shares back from Redis at their first report', async () => {
    const grpcPort = await freePort();
    const settings = { root: config.root, redisUrl: redis.url, ttlMs: 10_000, grpcPort };
    const first = await startQuotaServer(settings);
    stops.push(() => first.stop());
    const [eu, us] = [open(grpcPort, 'eu'), open(grpcPort, 'us')];
    let before: number[] = [];
    for (let round = 0; round < 2; round++) before = [await eu.demand(API, 600), await us.demand(API, 300)];
    expect(before).toEqual([592, 307]);

    expect(await first.stop('SIGKILL')).toBeNull();
    const second = await startQuotaServer(settings);
    stops.push(() => second.stop());
    const after = [await open(grpcPort, 'eu').demand(API, 600), await open(grpcPort, 'us').demand(API, 300)];
    expect(after).toEqual(before);

    // A client that does not name itself is a new client: it gets what the others leave.
    expect(await open(grpcPort, `anonymous-${Date.now()}`).demand(API, 600)).toBeLessThanOrEqual(
      900 - 592 - 307,
    );
  }, 30_000);
});
