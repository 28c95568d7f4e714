#!/usr/bin/env node
/**
 * One region of the regional quota fleet: an OS process with a `QuotaClient` (the build of
 * @sluice/server) behind a limiter whose one policy has `quota: { service, bucket }` (the build of
 * @sluice/core), offering `demand` requests per second; each is admitted from the region's assigned
 * share with no store call, or by the policy's fail mode without a live assignment. It tells its
 * parent (IPC) every 200 ms what it did.
 *
 * argv[2]: JSON { address, domain, bucket, clientId, reportIntervalMs, failMode: 'closed'|'open' }.
 * Parent -> region: { type: 'demand', perSecond }, { type: 'exit' }.
 * Region -> parent: { type: 'ready' }, then every STATS_MS { type: 'stats', atMs, demand, share,
 * offered, admitted, unassigned } (counts since the last; share: null without a live assignment).
 */
import { createLimiter, MemoryStore } from '@sluice/core';
import { QuotaClient } from '../../packages/server/dist/index.js';

const options = JSON.parse(process.argv[2]);
const client = new QuotaClient({
  address: options.address,
  domain: options.domain,
  clientId: options.clientId,
  reportIntervalMs: options.reportIntervalMs,
});
const limiter = createLimiter({
  store: new MemoryStore(),
  policies: [
    {
      name: 'regional',
      limit: 1_000_000,
      window: '1s',
      failMode: options.failMode,
      quota: { service: client, bucket: options.bucket },
    },
  ],
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
    limiter.check({ identity: 'region' }).then(count);
  }
}

/** Counts one decision: admitted or not, and whether it came from the fail mode (no live assignment). */
function count(decision) {
  if (decision.allowed) counts.admitted += 1;
  if (decision.source === 'fail-closed' || decision.source === 'fail-open') counts.unassigned += 1;
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
