/**
 * `npm run demo -- --regions N`: regional quotas. N regions (OS processes, each a `QuotaClient`)
 * share one 900/s budget through two `sluice-server` processes on one Redis (Envoy's Rate Limit
 * Quota Service): each admits from its assigned share with no call per request. Demand is uneven
 * (600/200/100 per s for three regions), then shifts; every second the demo prints each region's
 * demand, share and admitted/s, and the global total against the budget; at the end, what a
 * static split (900/N each) would have admitted.
 *
 * Uses REDIS_URL when set, else a private redis-server; without either, one server on its memory
 * store. Everything it starts is stopped by PID, on any exit.
 */

import {
  configRoot,
  quotaConfig,
  sleep,
  startQuotaServer,
  startRegion,
  staticAdmitted,
} from '../quota/fleet.mjs';
import { hasRedisServer, startRedis } from '../support/redis-server.js';

const BUDGET = 900;
const PHASE_MS = 6000;
const NAMES = ['eu', 'us', 'ap', 'sa', 'af', 'me', 'oc', 'an'];

/** Demand per region: 600/200/100 for three; else two thirds of the budget to the first, the rest shared. */
function demandsFor(count) {
  if (count === 3) return [600, 200, 100];
  const rest = Math.round(BUDGET / 3 / Math.max(1, count - 1));
  return Array.from({ length: count }, (_, i) => (i === 0 ? 600 : rest));
}

function pad(text, width) {
  return String(text).padStart(width);
}

/** Runs the regions demo with `count` regions (1 to 8); resolves when everything stopped. */
export async function runRegionsDemo(count, log) {
  if (!Number.isInteger(count) || count < 1 || count > NAMES.length) {
    throw new Error(`--regions must be a whole number from 1 to ${NAMES.length}, got ${count}`);
  }
  const pids = new Set();
  const killAll = () => {
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {}
    }
  };
  process.on('exit', killAll);
  const stops = [];
  const config = configRoot(quotaConfig(BUDGET));
  stops.push(async () => config.remove());
  try {
    let redisUrl = process.env.REDIS_URL;
    let servers = 2;
    let where = redisUrl ? `Redis at ${redisUrl.replace(/\/\/[^@]*@/, '//')}` : undefined;
    if (!redisUrl && hasRedisServer()) {
      const redis = await startRedis();
      pids.add(redis.pid);
      stops.push(() => redis.stop());
      redisUrl = redis.url;
      where = `a private redis-server (${redisUrl})`;
    } else if (!redisUrl) {
      servers = 1;
      where = 'its memory store (redis-server is not on PATH and REDIS_URL is unset: one server only)';
    }
    const started = [];
    for (let i = 0; i < servers; i++) {
      const server = await startQuotaServer({ root: config.root, redisUrl: redisUrl ?? '', ttlMs: 2000 });
      pids.add(server.pid);
      stops.push(() => server.stop());
      started.push(server);
    }
    const regions = [];
    for (let i = 0; i < count; i++) {
      const server = started[i % started.length];
      const region = await startRegion({
        name: NAMES[i],
        address: `127.0.0.1:${server.port}`,
        reportIntervalMs: 250,
      });
      stops.push(() => region.stop());
      regions.push(region);
    }
    log(`Sluice regional quotas: ${count} region processes share one budget of ${BUDGET}/s through`);
    log(`${servers} sluice-server process(es) on ${where} (Envoy's Rate Limit Quota Service).`);
    log('Each region admits from its assigned share, locally; it reports its demand every 250 ms.');
    log(
      "Each row sums the regions' 200 ms counts that ended in that second (a row may hold one count more).",
    );
    log();
    log(`  s | ${regions.map((r) => `${r.name}: demand  share  admitted`).join(' | ')} | total admitted`);

    const phases = [demandsFor(count), [...demandsFor(count)].reverse()];
    let second = 0;
    let admitted = 0;
    let staticTotal = 0;
    const startedAt = Date.now();
    for (const [p, demands] of phases.entries()) {
      for (const [i, r] of regions.entries()) r.setDemand(demands[i]);
      if (p > 0) log(`  -- demand shifts to ${demands.join('/')} per s --`);
      const phaseEnd = Date.now() + PHASE_MS;
      while (Date.now() < phaseEnd) {
        second += 1;
        // The records (every 200 ms) that ended in this second of the run.
        const fromMs = startedAt + (second - 1) * 1000;
        await sleep(Math.max(0, fromMs + 1100 - Date.now()));
        const cells = [];
        let total = 0;
        regions.forEach((r, i) => {
          const fresh = r.records.filter((s) => s.atMs > fromMs && s.atMs <= fromMs + 1000);
          const got = fresh.reduce((sum, s) => sum + s.admitted, 0);
          const share = fresh.at(-1)?.share;
          total += got;
          cells.push(`${pad(r.name, 2)}: ${pad(demands[i], 6)}  ${pad(share ?? '-', 5)}  ${pad(got, 8)}`);
        });
        admitted += total;
        staticTotal += staticAdmitted(demands, BUDGET);
        log(`${pad(second, 3)} | ${cells.join(' | ')} | ${pad(total, 5)} / ${BUDGET}`);
      }
    }
    const seconds = (Date.now() - startedAt) / 1000;
    log();
    log(
      `Global: ${admitted} admitted in ${seconds.toFixed(1)} s; the bound is ${BUDGET}/s x T + ${BUDGET} (one second of each share in the regions' buckets) = ${Math.round(BUDGET * seconds + BUDGET)}.`,
    );
    log(
      `A static split (${Math.round(BUDGET / count)}/s each) would have admitted about ${Math.round(staticTotal)} of the same demand.`,
    );
  } finally {
    for (const stop of stops.reverse()) await stop();
    process.off('exit', killAll);
  }
}
