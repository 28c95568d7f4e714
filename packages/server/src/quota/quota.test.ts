/**
 * The Rate Limit Quota Service through real gRPC streams on 127.0.0.1 and a real redis-server:
 * two servers on one Redis never assign more than the budget together; shares follow a demand
 * shift; a departed client's share goes back; bad reports end their stream alone with
 * INVALID_ARGUMENT; unknown buckets are abandoned; metrics name rules, never bucket values.
 */
import { spawnSync } from 'node:child_process';
import { status } from '@grpc/grpc-js';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type RedisProcess, startRedis } from '../../../../test/support/redis-server.js';
import { type RuntimeDir, runtimeDir, serviceEnv, startInProcess } from '../harness.test-support.js';
import type { RunningServer } from '../server.js';
import { type RawQuotaStream, rawQuotaStream, shareOf } from './quota-stream.test-support.js';

const CONFIG = `
domain: regions
descriptors:
  - key: api
    rate_limit: { unit: second, requests_per_unit: 900 }
  - key: open
    rate_limit: { unlimited: true }
  - key: closed
    rate_limit: { unit: second, requests_per_unit: 0 }
`;
const TTL_MS = 1500;

let redis: RedisProcess;
let admin: Redis;
let dir: RuntimeDir;
const servers: RunningServer[] = [];
const streams: RawQuotaStream[] = [];

beforeAll(async () => {
  redis = await startRedis();
  admin = new Redis(redis.port, '127.0.0.1');
  dir = runtimeDir({ 'regions.yaml': CONFIG });
});
afterAll(async () => {
  admin.disconnect();
  await redis.stop();
  dir.remove();
});
afterEach(async () => {
  for (const s of streams.splice(0)) s.close();
  for (const s of servers.splice(0)) await s.close();
  await admin.flushall();
});

async function server(extra: Record<string, string> = {}): Promise<RunningServer> {
  const running = await startInProcess(
    serviceEnv(dir, {
      REDIS_URL: `127.0.0.1:${redis.port}`,
      SLUICE_QUOTA_TTL_MS: String(TTL_MS),
      ...extra,
    }),
  );
  servers.push(running);
  return running;
}

function stream(port: number, clientId?: string): RawQuotaStream {
  const s = rawQuotaStream(port, 'regions', clientId);
  streams.push(s);
  return s;
}

const API = { api: 'checkout' };

describe('StreamRateLimitQuotas', () => {
  it('two servers on one Redis: the shares of three clients never add up to more than the budget', async () => {
    const [a, b] = [await server(), await server()];
    const clients = [stream(a.grpcPort), stream(b.grpcPort), stream(a.grpcPort)];
    const demands = [
      [600, 200, 100],
      [100, 200, 600],
      [900, 900, 900],
      [0, 0, 0],
      [50, 2000, 10],
    ];
    const latest = [0, 0, 0];
    for (const round of demands) {
      for (let i = 0; i < 3; i++) {
        latest[i] = await (clients[i] as RawQuotaStream).demand(API, round[i] as number);
        expect(latest.reduce((x, y) => x + y, 0)).toBeLessThanOrEqual(900);
      }
    }
  });

  it('600/200/100 per s on 900/s: shares close to demand after two reports each, and follow a shift', async () => {
    const [a, b] = [await server(), await server()];
    const clients = [stream(a.grpcPort), stream(b.grpcPort), stream(b.grpcPort)];
    const round = async (demands: number[]) => {
      const shares: number[] = [];
      for (let i = 0; i < 3; i++)
        shares.push(await (clients[i] as RawQuotaStream).demand(API, demands[i] as number));
      return shares;
    };
    await round([600, 200, 100]);
    expect(await round([600, 200, 100])).toEqual([585, 205, 110]);
    await round([100, 200, 600]);
    expect(await round([100, 200, 600])).toEqual([110, 205, 585]);
  });

  it('a client that leaves gives its share back within its TTL plus one report', async () => {
    const a = await server();
    const [stay, go] = [stream(a.grpcPort), stream(a.grpcPort)];
    await stay.demand(API, 600);
    await go.demand(API, 600);
    expect(await stay.demand(API, 600)).toBe(450);
    go.end();
    const leftAt = Date.now();
    let share = 0;
    while (share !== 900 && Date.now() - leftAt < TTL_MS + 1500) {
      await new Promise((r) => setTimeout(r, 100));
      share = await stay.demand(API, 600, 100);
    }
    expect(share).toBe(900);
    expect(Date.now() - leftAt).toBeLessThan(TTL_MS + 1000);
  });

  it('refuses bad reports with INVALID_ARGUMENT, ending that stream alone', async () => {
    const a = await server();
    const good = stream(a.grpcPort);
    expect(await good.demand(API, 10)).toBe(900);
    const usage = {
      bucket_id: { bucket: API },
      time_elapsed: { seconds: '1', nanos: 0 },
      num_requests_allowed: '1',
      num_requests_denied: '0',
    };
    const bad: Record<string, unknown>[] = [
      { domain: '', bucket_quota_usages: [usage] },
      { bucket_quota_usages: [] },
      { bucket_quota_usages: [{ ...usage, time_elapsed: { seconds: '0', nanos: 0 } }] },
      { bucket_quota_usages: [{ ...usage, time_elapsed: null }] },
      { bucket_quota_usages: [{ ...usage, bucket_id: { bucket: {} } }] },
      { bucket_quota_usages: [{ ...usage, bucket_id: { bucket: { api: '' } } }] },
    ];
    for (const reports of bad) {
      const s = rawQuotaStream(a.grpcPort, 'regions');
      streams.push(s);
      await expect(s.report(reports)).rejects.toMatchObject({ code: status.INVALID_ARGUMENT });
    }
    const other = stream(a.grpcPort);
    await other.report({ domain: 'regions', bucket_quota_usages: [usage] });
    await expect(other.report({ domain: 'elsewhere', bucket_quota_usages: [usage] })).rejects.toMatchObject({
      code: status.INVALID_ARGUMENT,
    });
    const unnamed = rawQuotaStream(a.grpcPort, 'regions', 'eu west');
    streams.push(unnamed);
    await expect(unnamed.report({ bucket_quota_usages: [usage] })).rejects.toMatchObject({
      code: status.INVALID_ARGUMENT,
    });
    expect(await good.demand(API, 10)).toBeGreaterThan(0);
  });

  it('abandons a bucket no rule matches; ALLOW_ALL for unlimited, DENY_ALL for 0 per unit', async () => {
    const a = await server();
    const s = stream(a.grpcPort);
    const response = await s.report({
      bucket_quota_usages: ['nowhere', 'open', 'closed'].map((key) => ({
        bucket_id: { bucket: { [key]: 'x' } },
        time_elapsed: { seconds: '1', nanos: 0 },
        num_requests_allowed: '1',
        num_requests_denied: '0',
      })),
    });
    expect(response.bucket_action.map((_, i) => shareOf(response, i))).toEqual([Number.NaN, -1, 0]);
    expect(response.bucket_action[0]).toMatchObject({ abandon_action: {} });
    const assignment = (
      response.bucket_action[1] as { quota_assignment_action: { assignment_time_to_live: unknown } }
    ).quota_assignment_action;
    expect(assignment.assignment_time_to_live).toMatchObject({ seconds: '1', nanos: 500_000_000 });
  });

  it('metrics per rule: shares, demand and clients, never a bucket value', async () => {
    const a = await server();
    await stream(a.grpcPort).demand({ api: 'secret-tenant-7' }, 300);
    const text = await (await fetch(`http://127.0.0.1:${a.httpPort}/metrics`)).text();
    expect(text).toContain('sluice_quota_assigned{domain="regions",rule="api"} 900');
    expect(text).toContain('sluice_quota_demand{domain="regions",rule="api"} 300');
    expect(text).toContain('sluice_quota_clients{domain="regions",rule="api"} 1');
    expect(text).not.toContain('secret-tenant-7');
    // The quota families pass promtool's checks (names, types, _total on counters).
    const quota = text
      .split('\n')
      .filter((line) => /^(# (HELP|TYPE) )?sluice_quota_/.test(line))
      .join('\n');
    const check = spawnSync('promtool', ['check', 'metrics'], { input: `${quota}\n`, encoding: 'utf8' });
    expect(check.error).toBeUndefined();
    expect(`${check.stdout}${check.stderr}`).toBe('');
    expect(check.status).toBe(0);
  });
});
