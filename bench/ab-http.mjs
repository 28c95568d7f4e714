/**
 * Experiment driver (not part of `npm run bench`): A/B of one framework's Sluice server under
 * RedisStore's maxBatch, side by side with the baseline, alternating in short rounds.
 *   node bench/ab-http.mjs --framework koa --path allowed --variants 1,128 [--rounds 5]
 */
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { startRedis } from '../test/support/redis-server.js';
import { loadLimited, startServerProcess, stopServerProcess } from './lib/http-server.mjs';

const { values: opts } = parseArgs({
  options: {
    framework: { type: 'string', default: 'koa' },
    path: { type: 'string', default: 'allowed' },
    variants: { type: 'string', default: '1,128' },
    rounds: { type: 'string', default: '5' },
    seconds: { type: 'string', default: '2' },
  },
});
const redis = await startRedis();
const admin = new Redis(redis.url);
const evalshaCalls = async () =>
  Number(/cmdstat_evalsha:calls=(\d+)/.exec(await admin.info('commandstats'))?.[1] ?? 0);
const common = ['--framework', opts.framework, '--path', opts.path];
const servers = { baseline: await startServerProcess([...common, '--variant', 'baseline']) };
for (const v of opts.variants.split(',')) {
  servers[`sluice max-batch ${v}`] = await startServerProcess([
    ...common,
    '--variant',
    'sluice',
    '--store',
    'redis',
    '--redis-url',
    redis.url,
    '--max-batch',
    v,
  ]);
}
async function load(port) {
  const result = await loadLimited({ port, seconds: Number(opts.seconds), allowed: opts.path === 'allowed' });
  const codes = Object.entries(result.statusCodeStats ?? {})
    .map(([c, s]) => `${c}:${s.count}`)
    .join(' ');
  return { rps: result.requests.average, codes };
}
const names = Object.keys(servers);
const ratios = Object.fromEntries(names.map((k) => [k, []]));
for (let round = 0; round < Number(opts.rounds); round++) {
  const order = names.slice(round % names.length).concat(names.slice(0, round % names.length));
  const rps = {};
  for (const name of order) {
    const callsBefore = await evalshaCalls();
    const r = await load(servers[name].port);
    const calls = (await evalshaCalls()) - callsBefore;
    rps[name] = r.rps;
    if (round === 0) {
      const perCall =
        calls > 0 ? `, ${((r.rps * Number(opts.seconds)) / calls).toFixed(1)} requests per script call` : '';
      console.log(`  ${name}: ${Math.round(r.rps)} req/s ${r.codes}${perCall}`);
    }
  }
  for (const name of names) ratios[name].push(rps[name] / rps.baseline);
}
const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
for (const name of names) {
  const r = ratios[name];
  console.log(
    `${name.padEnd(28)} ${median(r).toFixed(2)} of baseline (${Math.min(...r).toFixed(2)}-${Math.max(...r).toFixed(2)})`,
  );
}
await Promise.all(Object.values(servers).map(stopServerProcess));
admin.disconnect();
await redis.stop();
