/**
 * Redis memory per key: MEMORY USAGE (SAMPLES 0) of the key(s) one identity leaves behind
 * after one decision, for each Sluice algorithm and for the anchors. Every library limits
 * the same identity, `user-00042`, under its own default key layout.
 *
 *   node suites/memory.mjs --redis-url redis://127.0.0.1:PORT [--out file.json]
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { RedisStore as HonoRedisStore } from 'hono-rate-limiter';
import { Redis } from 'ioredis';
import koaRatelimit from 'koa-ratelimit';
import { RedisStore as RateLimitRedisStore } from 'rate-limit-redis';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { honoRedisClient } from '../anchors/hono-ioredis-client.mjs';
import { RedisThrottlerStorage } from '../anchors/nest-throttler-redis-storage.mjs';
import { loadSluice } from '../lib/sluice.mjs';

const { values: opts } = parseArgs({ options: { 'redis-url': { type: 'string' }, out: { type: 'string' } } });
const redisUrl = opts['redis-url'];
if (!redisUrl) throw new Error('--redis-url is required');
const client = new Redis(redisUrl);
const ID = 'user-00042';
const { core, node, missing } = await loadSluice();

/** Runs `act`, then sums MEMORY USAGE over every key it created. */
async function measure(name, act, note) {
  await client.flushall();
  try {
    await act();
  } catch (error) {
    return { name, pending: error instanceof Error ? error.message : String(error) };
  }
  const keys = await client.keys('*');
  let bytes = 0;
  for (const key of keys) bytes += Number(await client.call('MEMORY', 'USAGE', key, 'SAMPLES', '0'));
  const types = await Promise.all(keys.map((k) => client.type(k)));
  return { name, bytes, keys: keys.length, keyLengths: keys.map((k) => k.length), types, note };
}

const rows = [];
// Reference shapes on a key as long as Sluice's key for this identity (`sluice:{user-00042}:p1`).
const refKey = `sluice:{${ID}}:p1`;
rows.push(
  await measure(
    'plain counter (INCR + PEXPIRE)',
    async () => {
      await client.incr(refKey);
      await client.pexpire(refKey, 60_000);
    },
    `key ${refKey.length} chars`,
  ),
);
rows.push(
  await measure(
    'two-field hash (HSET tokens, ts + PEXPIRE)',
    async () => {
      await client.hset(refKey, 'tokens', '19.5', 'ts', String(Date.now()));
      await client.pexpire(refKey, 60_000);
    },
    `key ${refKey.length} chars`,
  ),
);

// Anchors, each with its defaults.
rows.push(
  await measure('rate-limiter-flexible RateLimiterRedis', async () => {
    await new RateLimiterRedis({ storeClient: client, points: 100, duration: 60 }).consume(ID);
  }),
);
rows.push(
  await measure('express-rate-limit + rate-limit-redis', async () => {
    const store = new RateLimitRedisStore({ sendCommand: (...args) => client.call(...args) });
    store.init({ windowMs: 60_000 });
    await store.increment(ID);
  }),
);
rows.push(
  await measure('hono-rate-limiter RedisStore', async () => {
    const store = new HonoRedisStore({ client: honoRedisClient(client) });
    store.init({ windowMs: 60_000 });
    await store.increment(ID);
  }),
);
rows.push(
  await measure('koa-ratelimit (redis driver)', async () => {
    const middleware = koaRatelimit({
      driver: 'redis',
      db: client,
      duration: 60_000,
      max: 100,
      id: () => ID,
    });
    const ctx = { ip: ID, state: {}, set() {}, throw() {}, status: 200 };
    await middleware(ctx, async () => {});
  }),
);
rows.push(
  await measure('@nestjs/throttler (Redis storage, bench/anchors)', async () => {
    await new RedisThrottlerStorage(client).increment(ID, 60_000, 100, 0, 'default');
  }),
);

// Sluice: one decision per algorithm (limit 100 per minute).
for (const algorithm of ['token-bucket', 'gcra', 'sliding-window', 'fixed-window', 'sliding-log']) {
  rows.push(
    await measure(`sluice ${algorithm}`, async () => {
      if (typeof core.createLimiter !== 'function' || typeof node.createRedisStore !== 'function') {
        throw new Error('limiter or createRedisStore not built yet');
      }
      const limiter = core.createLimiter({
        policies: [{ name: 'p1', algorithm, limit: 100, window: '1m' }],
        store: node.createRedisStore(client),
      });
      const d = await limiter.check({ identity: ID });
      if (d.outcome !== 'allowed') throw new Error(`decision was ${d.outcome}`);
    }),
  );
  const last = rows[rows.length - 1];
  last.algorithm = algorithm;
  last.library = 'sluice';
}
// The same with a one-letter prefix, so the key is about as long as the anchors' keys.
for (const algorithm of ['gcra', 'token-bucket']) {
  rows.push(
    await measure(`sluice ${algorithm}, short prefix`, async () => {
      if (typeof core.createLimiter !== 'function' || typeof node.createRedisStore !== 'function') {
        throw new Error('limiter or createRedisStore not built yet');
      }
      const limiter = core.createLimiter({
        policies: [{ name: 'p', algorithm, limit: 100, window: '1m' }],
        store: node.createRedisStore(client),
        prefix: 's',
      });
      await limiter.check({ identity: ID });
    }),
  );
}
// Sliding log grows with the requests it admits: also at a full window of 100.
rows.push(
  await measure('sluice sliding-log, 100 requests admitted', async () => {
    if (typeof core.createLimiter !== 'function' || typeof node.createRedisStore !== 'function') {
      throw new Error('limiter or createRedisStore not built yet');
    }
    const limiter = core.createLimiter({
      policies: [{ name: 'p1', algorithm: 'sliding-log', limit: 100, window: '1m' }],
      store: node.createRedisStore(client),
    });
    for (let i = 0; i < 100; i++) await limiter.check({ identity: ID });
  }),
);

for (const r of rows) {
  process.stderr.write(
    `  ${r.name}: ${r.pending ? `pending (${r.pending})` : `${r.bytes} B in ${r.keys} key(s) ${r.types}`}\n`,
  );
}
const output = { suite: 'memory', identity: ID, missing, rows };
if (opts.out) writeFileSync(opts.out, JSON.stringify(output, null, 2));
else process.stdout.write(`${JSON.stringify(output)}\n`);
await client.quit();
process.exit(0);
