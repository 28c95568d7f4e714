/**
 * What the rate limit service costs per call without its transport: `service.shouldRateLimit` of
 * two builds of @sluice/server (this tree's packages/server/dist and `--base-dist`, an earlier
 * build's dist) in one process, on the memory store, one descriptor per call over 10k tenants,
 * every call allowed; CPU µs per call (process.cpuUsage), rounds alternated, medians. The plan, the
 * limiter's path and the answer, and nothing of gRPC or Redis.
 *
 *   node suites/rls-service-ab.mjs --base-dist OTHER/packages/server/dist [--calls 50000] [--rounds 6]
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { MemoryStore } from '@sluice/core';
import { median } from '../lib/stats.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const { values: opts } = parseArgs({
  options: {
    'base-dist': { type: 'string' },
    calls: { type: 'string', default: '50000' },
    rounds: { type: 'string', default: '6' },
  },
});
if (opts['base-dist'] === undefined)
  throw new Error('--base-dist: the dist folder of an earlier @sluice/server build');
const calls = Number(opts.calls);
const rounds = Number(opts.rounds);
const root = mkdtempSync(join(tmpdir(), 'sluice-bench-rls-ab-'));
mkdirSync(join(root, 'config'), { recursive: true });
writeFileSync(
  join(root, 'config', 'bench.yaml'),
  'domain: bench\ndescriptors:\n  - key: tenant\n    rate_limit: { unit: hour, requests_per_unit: 1000000000 }\n',
);
const dists = {
  base: resolve(opts['base-dist']),
  current: join(here, '..', '..', 'packages', 'server', 'dist'),
};
const services = {};
for (const [name, dist] of Object.entries(dists)) {
  const server = await import(pathToFileURL(join(dist, 'index.js')).href);
  const settings = server.readSettings({
    RUNTIME_ROOT: root,
    RUNTIME_SUBDIRECTORY: '',
    RUNTIME_WATCH_ROOT: 'false',
  });
  const config = server.loadConfigDir(settings.configDir);
  services[name] = new server.RateLimitService({ settings, store: new MemoryStore(), config });
}
const requests = Array.from({ length: 10_000 }, (_, i) => ({
  domain: 'bench',
  hits_addend: 0,
  descriptors: [{ entries: [{ key: 'tenant', value: `t${i}` }] }],
}));

/** CPU µs per call of `calls` calls, one after the other. */
async function run(service) {
  const before = process.cpuUsage();
  for (let i = 0; i < calls; i++) {
    const reply = await service.shouldRateLimit(requests[i % requests.length]);
    if (reply.overall_code !== 'OK') throw new Error(`unexpected ${reply.overall_code}`);
  }
  const used = process.cpuUsage(before);
  return (used.user + used.system) / calls;
}

for (const service of Object.values(services)) await run(service); // warm-up
const results = { base: [], current: [] };
for (let round = 0; round < rounds; round++) {
  for (const name of round % 2 === 0 ? ['base', 'current'] : ['current', 'base'])
    results[name].push(await run(services[name]));
}
rmSync(root, { recursive: true, force: true });
const line = (name) =>
  `${name}: ${results[name].map((us) => us.toFixed(2)).join(', ')} µs per call (median ${median(results[name]).toFixed(2)})`;
console.log(
  [
    line('base'),
    line('current'),
    `current / base: ${(median(results.current) / median(results.base)).toFixed(2)}x`,
  ].join('\n'),
);
