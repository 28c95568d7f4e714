#!/usr/bin/env node
/**
 * One region of the regional quota fleet: an OS process with a `QuotaClient` (the build of
 * @sluice/server) that offers `demand` requests per second to its bucket, admits them from its
 * assigned share with no call per request, and tells its parent (IPC) every 200 ms what it did.
 *
 * argv[2]: JSON { address, domain, bucket, clientId, reportIntervalMs, failMode: 'closed'|'open' }.
 * Parent -> region: { type: 'demand', perSecond }, { type: 'exit' }.
 * Region -> parent: { type: 'ready' }, then every STATS_MS { type: 'stats', atMs, demand, share,
 * offered, admitted, unassigned } (counts since the last; share: null without a live assignment).
 */
import { QuotaClient } from '../../packages/server/dist/index.js';

const options = JSON.parse(process.argv[2]);
const client = new QuotaClient({
  address: options.address,
  domain: options.domain,
  clientId: options.clientId,
  reportIntervalMs: options.reportIntervalMs,
});
const bucket = client.bucket(options.bucket);
const TICK_MS = 5;
const STATS_MS = 200;

let demand = 0;
let owed = 0;
let last = performance.now();
let counts = { offered: 0, admitted: 0, unassigned: 0 };

function tick() {
  const now = performance.now();
  owed += (demand * (now - last)) / 1000;
  last = now;
  while (owed >= 1) {
    owed -= 1;
    counts.offered += 1;
    const verdict = bucket.take();
    if (verdict === 'unassigned') counts.unassigned += 1;
    if (verdict === 'allowed' || (verdict === 'unassigned' && options.failMode === 'open'))
      counts.admitted += 1;
  }
}

function report() {
  tick();
  process.send?.({ type: 'stats', atMs: Date.now(), demand, share: bucket.share() ?? null, ...counts });
  counts = { offered: 0, admitted: 0, unassigned: 0 };
}

const ticks = setInterval(tick, TICK_MS);
const stats = setInterval(report, STATS_MS);
process.on('message', (message) => {
  if (message.type === 'demand') {
    tick();
    demand = message.perSecond;
  } else if (message.type === 'exit') {
    clearInterval(ticks);
    clearInterval(stats);
    client.close();
    process.exit(0);
  }
});
process.on('disconnect', () => process.exit(0));
process.send?.({ type: 'ready' });
