/**
 * Regional quotas across real OS processes: three regions (region.mjs, each a `QuotaClient`)
 * on two `sluice-server` processes and one redis-server, a 900/s budget.
 *
 * - The bound: over the whole run T, what all regions admit together is at most 900 x T plus the
 *   overshoot the design states: the regions' token buckets, one second of each share (900 in all).
 * - Utilization under 600/200/100 per s: at least 90% of the budget, where a static split of 300
 *   each admits 600/s (computed: a 300/s bucket admits min(demand, 300)).
 * - A shift to 100/200/600: shares follow within two reports of each region.
 * - A region cut from its server (a proxy resets its connections): it admits from its last share
 *   until its TTL, then its fail mode (closed: nothing); the others take its share back within
 *   its TTL plus one report.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FaultProxy, startFaultProxy } from '../support/fault-proxy.js';
import { type RedisProcess, startRedis } from '../support/redis-server.js';
import { configRoot, quotaConfig, sleep, startQuotaServer, startRegion, staticAdmitted } from './fleet.mjs';

const BUDGET = 900;
const TTL_MS = 2000;
const REPORT_MS = 250;

interface Stats {
  atMs: number;
  demand: number;
  share: number | null;
  offered: number;
  admitted: number;
  unassigned: number;
}
type Region = Awaited<ReturnType<typeof startRegion>> & { records: Stats[] };

let redis: RedisProcess;
let config: ReturnType<typeof configRoot>;
let proxy: FaultProxy;
const stops: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  redis = await startRedis();
  config = configRoot(quotaConfig(BUDGET));
});
afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
  await proxy?.close();
  await redis?.stop();
  config?.remove();
});

/** The records (every 200 ms) of `region` that end in [fromMs, toMs]. */
const within = (region: Region, fromMs: number, toMs: number): Stats[] =>
  region.records.filter((s) => s.atMs >= fromMs && s.atMs <= toMs);
const sum = (records: Stats[], field: 'admitted' | 'offered'): number =>
  records.reduce((total, s) => total + s[field], 0);

describe('three regions on two servers and one Redis', () => {
  it('keep the bound, use the budget under uneven demand, follow a shift, survive a cut', async () => {
    const settings = { root: config.root, redisUrl: redis.url, ttlMs: TTL_MS };
    const [a, b] = await Promise.all([startQuotaServer(settings), startQuotaServer(settings)]);
    stops.push(
      () => a.stop(),
      () => b.stop(),
    );
    proxy = await startFaultProxy({ port: b.port });
    const addresses = [`127.0.0.1:${a.port}`, `127.0.0.1:${a.port}`, `127.0.0.1:${proxy.port}`];
    const regions = (await Promise.all(
      ['eu', 'us', 'ap'].map((name, i) =>
        startRegion({ name, address: addresses[i] as string, reportIntervalMs: REPORT_MS }),
      ),
    )) as Region[];
    for (const region of regions) stops.push(() => region.stop());
    const [eu, us, ap] = regions as [Region, Region, Region];
    const demand = (perSecond: number[]) => {
      for (const [i, r] of regions.entries()) r.setDemand(perSecond[i] as number);
    };

    const startedAt = Date.now();
    demand([600, 200, 100]);
    await sleep(3600);
    const shiftAt = Date.now();
    demand([100, 200, 600]);
    await sleep(3600);
    const cutAt = Date.now();
    demand([600, 600, 600]);
    proxy.setMode('reset');
    await sleep(4700);
    const endedAt = Date.now();

    // The bound over the whole run, and over every window of three of its seconds.
    const all = regions.flatMap((r) => r.records);
    const runSeconds = (endedAt - startedAt) / 1000;
    const admitted = sum(all, 'admitted');
    expect(admitted).toBeLessThanOrEqual(BUDGET * runSeconds + BUDGET);
    for (let fromMs = startedAt; fromMs + 3000 <= endedAt; fromMs += 500) {
      const windowed = regions.flatMap((r) => within(r, fromMs, fromMs + 3000));
      expect(sum(windowed, 'admitted')).toBeLessThanOrEqual(BUDGET * 3 + BUDGET);
    }

    // Utilization under 600/200/100 once shares settled (the last two seconds before the shift).
    const settled = regions.flatMap((r) => within(r, shiftAt - 2000, shiftAt));
    const perSecond = sum(settled, 'admitted') / 2;
    expect(perSecond).toBeGreaterThanOrEqual(0.9 * BUDGET);
    expect(perSecond).toBeGreaterThan(staticAdmitted([600, 200, 100], BUDGET) * 1.3);

    // The shift: by two seconds after it, ap holds most of the budget and eu little.
    const afterShift = (r: Region) => within(r, shiftAt + 1500, cutAt).at(-1)?.share ?? 0;
    expect(afterShift(ap)).toBeGreaterThanOrEqual(500);
    expect(afterShift(eu)).toBeLessThanOrEqual(200);

    // The cut: ap admits from its last share in the second after it, nothing once its TTL passed.
    expect(sum(within(ap, cutAt + 500, cutAt + 1600), 'admitted')).toBeGreaterThan(0);
    const expired = within(ap, cutAt + TTL_MS + 1100, endedAt + 500);
    expect(expired.length).toBeGreaterThan(0);
    for (const s of expired) {
      expect(s.admitted).toBe(0);
      expect(s.share).toBeNull();
    }
    // ... and eu and us hold its share again within its TTL plus one report (450 each, 600 asked).
    const lastShares = [eu, us].map((r) => within(r, cutAt + TTL_MS + 2 * REPORT_MS + 1000, endedAt + 500));
    for (const records of lastShares) expect(records.at(-1)?.share ?? 0).toBeGreaterThanOrEqual(400);

    console.log(
      `regions: ${admitted} admitted in ${runSeconds.toFixed(1)} s (bound ${Math.round(BUDGET * runSeconds + BUDGET)}); ` +
        `600/200/100: ${perSecond}/s against ${staticAdmitted([600, 200, 100], BUDGET)}/s for a static split; ` +
        `after the shift ap ${afterShift(ap)}, eu ${afterShift(eu)}`,
    );
  }, 60_000);
});
