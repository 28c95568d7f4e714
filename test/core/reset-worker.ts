/**
 * One instance of a service for the reset tests: limiters over Redis (SLUICE_RESET_URL) or Redis
 * Cluster (SLUICE_RESET_CLUSTER, `host:port,...`), one with the deny cache on with its defaults and
 * one with it off, each with the policies of RESET_POLICIES: plain, leased, and with a local stage.
 * Driven over IPC by reset-across-instances.ts (bundled with esbuild, run with fork()).
 *
 * Every message names a `row` (a policy and a deny cache setting, see RESET_ROWS).
 * Parent -> worker: { type: 'drain', row, identity } (check until denied in-process),
 * { type: 'poll', row, identity, everyMs, giveUpMs } (check until admitted),
 * { type: 'reset', row, identity }, { type: 'exit' }. Worker -> parent: { type: 'ready' },
 * { type: 'drained', source }, { type: 'admitted', atMs, inProcessDenials } or { type: 'gave-up' },
 * { type: 'reset-done', atMs }.
 */
import { Cluster, Redis } from 'ioredis';
import { createLimiter, type Limiter } from '../../packages/core/src/limiter/create-limiter.js';
import { RedisStore } from '../../packages/core/src/stores/redis-store.js';
import { RESET_POLICIES, RESET_ROWS, type ResetRow } from './reset-rows.js';

type Message =
  | { readonly type: 'drain'; readonly row: ResetRow; readonly identity: string }
  | {
      readonly type: 'poll';
      readonly row: ResetRow;
      readonly identity: string;
      readonly everyMs: number;
      readonly giveUpMs: number;
    }
  | { readonly type: 'reset'; readonly row: ResetRow; readonly identity: string }
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

const store = new RedisStore({ client });
const limiterOf = (denyCache: boolean): Limiter =>
  createLimiter({
    policies: RESET_POLICIES,
    prefix: process.env.SLUICE_RESET_PREFIX ?? 'reset-test',
    store,
    timeoutMs: 2000,
    ...(!denyCache && { denyCache: false }),
  });
const limiters = { cached: limiterOf(true), uncached: limiterOf(false) };
/** The limiter and descriptor of a row's checks. */
const rowOf = (row: ResetRow, identity: string) => {
  const { policy, denyCache } = RESET_ROWS[row];
  return {
    limiter: denyCache ? limiters.cached : limiters.uncached,
    descriptor: { identity, policies: [policy] },
  };
};
const IN_PROCESS = ['deny-cache', 'lease', 'local-stage'];

const send = (message: unknown): void => {
  process.send?.(message);
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

process.on('message', (message: Message) => {
  void (async () => {
    if (message.type === 'drain') {
      const { limiter, descriptor } = rowOf(message.row, message.identity);
      let source = '';
      for (let i = 0; i < 100 && !IN_PROCESS.includes(source); i++) {
        source = (await limiter.check(descriptor)).source;
      }
      send({ type: 'drained', source });
    } else if (message.type === 'poll') {
      const { limiter, descriptor } = rowOf(message.row, message.identity);
      const startedAt = Date.now();
      let inProcessDenials = 0;
      while (Date.now() - startedAt < message.giveUpMs) {
        const d = await limiter.check(descriptor);
        if (d.allowed) return send({ type: 'admitted', atMs: Date.now(), inProcessDenials });
        if (IN_PROCESS.includes(d.source)) inProcessDenials++;
        await sleep(message.everyMs);
      }
      send({ type: 'gave-up' });
    } else if (message.type === 'reset') {
      const { limiter } = rowOf(message.row, message.identity);
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
  await limiters.cached.peek({ identity: 'warm-up' });
  send({ type: 'ready' });
})();
