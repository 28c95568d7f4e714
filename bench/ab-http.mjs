/**
 * Experiment driver (not part of `npm run bench`): A/B of one framework's Sluice server under
 * RedisStore's maxBatch, side by side with the baseline, alternating in short rounds.
 *   node bench/ab-http.mjs --framework koa --path allowed --variants 1,128 [--rounds 5]
 */
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { Redis } from 'ioredis';
import { startRedis } from './lib/redis-server.mjs';

const here = dirname(fileURLToPath(import.meta.url));
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
function server(args) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(here, 'servers', 'server.mjs'), ...args], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    child.stdout.on('data', (d) => {
      const m = /listening on (\d+)/.exec(String(d));
      if (m) resolve({ child, port: Number(m[1]) });
    });
    child.once('exit', (code) => reject(new Error(`server exited ${code}`)));
  });
}
const common = ['--framework', opts.framework, '--path', opts.path];
const servers = { baseline: await server([...common, '--variant', 'baseline']) };
for (const v of opts.variants.split(',')) {
  servers[`sluice max-batch ${v}`] = await server([
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
const keys = Array.from({ length: 10_000 }, (_, i) => `key-${i}`);
let n = 0;
async function load(port) {
  const result = await autocannon({
    url: `http://127.0.0.1:${port}/limited`,
    connections: 32,
    duration: Number(opts.seconds),
    requests: [{ setupRequest: (req) => ({ ...req, headers: { 'x-api-key': keys[n++ % keys.length] } }) }],
  });
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
for (const s of Object.values(servers)) s.child.kill('SIGTERM');
admin.disconnect();
await redis.stop();
