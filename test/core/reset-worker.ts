/**
 * One instance of a service for the reset tests: a limiter over Redis (SLUICE_RESET_URL) or Redis
 * Cluster (SLUICE_RESET_CLUSTER, `host:port,...`), deny cache on with its defaults. Driven over
 * IPC by reset-across-instances.ts (bundled with esbuild, run with fork()).
 *
 * Parent -> worker: { type: 'drain', identity } (check until the deny cache answers),
 * { type: 'poll', identity, everyMs, giveUpMs } (check until admitted), { type: 'reset', identity },
 * { type: 'exit' }. Worker -> parent: { type: 'ready' }, { type: 'drained', source },
 * { type: 'admitted', atMs, cachedDenials } or { type: 'gave-up' }, { type: 'reset-done', atMs }.
 */
import { Cluster, Redis } from 'ioredis';
import { createLimiter } from '../../packages/core/src/limiter/create-limiter.js';
import { RedisStore } from '../../packages/core/src/stores/redis-store.js';

type Message =
  | { readonly type: 'drain'; readonly identity: string }
  | { readonly type: 'poll'; readonly identity: string; readonly everyMs: number; readonly giveUpMs: number }
  | { readonly type: 'reset'; readonly identity: string }
  | { readonly type: 'exit' };

const clusterNodes = process.env.SLUICE_RESET_CLUSTER;
const client =
  clusterNodes !== undefined && clusterNodes !== ''
    ? new Cluster(
        clusterNodes.split(',').map((hp) => {
          const [host, port] = hp.split(':');
          return { host: host as string, port: Number(port) };
        }),
        { scaleReads: 'master' },
      )
    : new Redis(process.env.SLUICE_RESET_URL ?? '');
client.on('error', () => {});

const limiter = createLimiter({
  // One admission per hour: only a reset lets this identity in again during the test.
  policies: [{ name: 'login', algorithm: 'fixed-window', limit: 1, window: '1h' }],
  prefix: process.env.SLUICE_RESET_PREFIX ?? 'reset-test',
  store: new RedisStore({ client }),
  timeoutMs: 2000,
});

const send = (message: unknown): void => {
  process.send?.(message);
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

process.on('message', (message: Message) => {
  void (async () => {
    if (message.type === 'drain') {
      let source = '';
      for (let i = 0; i < 100 && source !== 'deny-cache'; i++) {
        source = (await limiter.check({ identity: message.identity })).source;
      }
      send({ type: 'drained', source });
    } else if (message.type === 'poll') {
      const startedAt = Date.now();
      let cachedDenials = 0;
      while (Date.now() - startedAt < message.giveUpMs) {
        const d = await limiter.check({ identity: message.identity });
        if (d.allowed) return send({ type: 'admitted', atMs: Date.now(), cachedDenials });
        if (d.source === 'deny-cache') cachedDenials++;
        await sleep(message.everyMs);
      }
      send({ type: 'gave-up' });
    } else if (message.type === 'reset') {
      await limiter.reset(message.identity);
      send({ type: 'reset-done', atMs: Date.now() });
    } else {
      client.disconnect();
      process.exit(0);
    }
  })();
});

void (async () => {
  if (client instanceof Cluster && client.status !== 'ready') {
    await new Promise<void>((resolve) => client.once('ready', () => resolve()));
  }
  await limiter.peek({ identity: 'warm-up' });
  send({ type: 'ready' });
})();
