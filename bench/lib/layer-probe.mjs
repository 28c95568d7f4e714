/**
 * The child of inproc-instructions.mjs: builds one layer of Sluice from the tree at `--root`,
 * warms it up, then runs `--iterations` sequential requests with callgrind counting switched on
 * (`callgrind_control -i on`) and dumps the count. Not meant to be run by hand.
 */
import { spawnSync } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const { values: opts } = parseArgs({
  options: {
    root: { type: 'string' },
    layer: { type: 'string' },
    path: { type: 'string' },
    warmup: { type: 'string' },
    iterations: { type: 'string' },
    'redis-url': { type: 'string' },
  },
});
const from = (relative) => import(pathToFileURL(`${opts.root}/${relative}`).href);
const core = await from('packages/core/dist/index.js');
const store = opts['redis-url']
  ? (await from('packages/core/dist/node/index.js')).createRedisStore(opts['redis-url'])
  : undefined;
const allowed = opts.path === 'allowed';
// The benchmark servers' policy (bench/servers/config.mjs): a quota no key uses up, or one per hour.
const policy = { name: 'api', algorithm: 'token-bucket', limit: allowed ? 1_000_000 : 1, window: 3_600_000 };
const keys = Array.from({ length: 10_000 }, (_, i) => `key-${i}`);
const keyOf = (i) => (allowed ? keys[i % keys.length] : 'one');
const prefix = `probe-${process.pid}`;

/** One request of the layer; resolves when it is answered. */
async function layerRun() {
  if (opts.layer === 'limiter') {
    const limiter = core.createLimiter({ policies: [policy], prefix, store, timeoutMs: 60_000 });
    return (i) => limiter.check({ identity: keyOf(i) });
  }
  if (opts.layer === 'limiter-settle') {
    // A check that reserves 10 units, then its settle to 4 (a refund); deny: 1 unit, then a settle
    // of the denial (nothing to settle).
    const limiter = core.createLimiter({ policies: [policy], prefix, store, timeoutMs: 60_000 });
    const cost = allowed ? 10 : 1;
    const units = allowed ? 4 : 0;
    return async (i) =>
      limiter.settle(await limiter.check({ identity: keyOf(i), cost, reserve: true }), units);
  }
  if (opts.layer === 'hono' || opts.layer === 'hono-baseline') {
    const { Hono } = await from('node_modules/hono/dist/index.js');
    const app = new Hono();
    const handlers = [];
    if (opts.layer === 'hono') {
      const { rateLimit } = await from('packages/hono/dist/index.js');
      handlers.push(
        rateLimit({ policies: [policy], prefix, store, identity: (c) => c.req.header('x-api-key') }),
      );
    }
    app.get('/limited', ...handlers, (c) => c.json({ ok: true }));
    const requests = keys.map(
      (_, i) => new Request('http://127.0.0.1/limited', { headers: { 'x-api-key': keyOf(i) } }),
    );
    return (i) => app.fetch(requests[i % requests.length]);
  }
  throw new Error(`layer-probe: unknown layer ${opts.layer}`);
}

const run = await layerRun();
for (let i = 0; i < Number(opts.warmup); i++) await run(i);
const control = (...args) => spawnSync('callgrind_control', [...args, String(process.pid)]);
control('-i', 'on');
for (let i = 0; i < Number(opts.iterations); i++) await run(i);
control('-d');
control('-i', 'off');
process.exit(0);
