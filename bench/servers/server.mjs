/**
 * One benchmark server in its own process:
 *   node servers/server.mjs --framework express|koa|hono|nest|fastify --variant baseline|noop|noop-async|fixed-429|sluice|usual
 *        --store memory|redis --path allowed|deny|concurrent|queued [--redis-url URL] [--port 0]
 *        (concurrent, queued: --variant sluice, see config.mjs)
 *        [--lease-units N --lease-ttl-ms MS]   (Sluice: the policy takes leases of N units)
 * Prints `listening on <port>` when ready; exits on SIGTERM.
 */
import { parseArgs } from 'node:util';

const { values: opts } = parseArgs({
  options: {
    framework: { type: 'string' },
    variant: { type: 'string', default: 'baseline' },
    store: { type: 'string', default: 'memory' },
    path: { type: 'string', default: 'allowed' },
    'redis-url': { type: 'string' },
    port: { type: 'string', default: '0' },
    // Experiment: ioredis auto-pipelining on the Sluice store's client (not Sluice's default).
    autopipelining: { type: 'boolean', default: false },
    // Experiment: RedisStore's maxBatch (1 = no batching).
    'max-batch': { type: 'string' },
    // The leased setup: Sluice's policy with lease: { units, ttlMs }.
    'lease-units': { type: 'string' },
    'lease-ttl-ms': { type: 'string', default: '1000' },
  },
});
const frameworks = ['express', 'koa', 'hono', 'nest', 'fastify'];
if (!frameworks.includes(opts.framework))
  throw new Error(`--framework must be one of ${frameworks.join(', ')}, got ${opts.framework}`);
const lease =
  opts['lease-units'] === undefined
    ? undefined
    : { units: Number(opts['lease-units']), ttlMs: Number(opts['lease-ttl-ms']) };
if (lease !== undefined && opts.variant !== 'sluice')
  throw new Error(`--lease-units is for --variant sluice, got --variant ${opts.variant}`);
let redis;
let sluiceStore;
if (opts.store === 'redis' && opts.variant !== 'baseline') {
  if (!opts['redis-url']) throw new Error('--redis-url is required with --store redis');
  if (opts.variant === 'sluice') {
    const { createRedisStore } = await import('@sluice/core/node');
    sluiceStore = createRedisStore(opts['redis-url'], {
      ...(opts.autopipelining ? { redisOptions: { enableAutoPipelining: true } } : {}),
      ...(opts['max-batch'] ? { maxBatch: Number(opts['max-batch']) } : {}),
    });
  } else {
    const { Redis } = await import('ioredis');
    redis = new Redis(opts['redis-url']);
  }
}
const { createServer } = await import(`./${opts.framework}.mjs`);
const listen = await createServer({
  variant: opts.variant,
  store: opts.store,
  path: opts.path,
  redis,
  sluiceStore,
  lease,
});
const port = await listen(Number(opts.port));
console.log(
  `${opts.framework}/${opts.variant}/${opts.store}${lease ? '/leased' : ''}/${opts.path} listening on ${port}`,
);
const stop = () => process.exit(0);
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
