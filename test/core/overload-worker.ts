/**
 * An overload worker: one OS process with a limiter per policy on Redis or the Cluster, for the
 * example apps' overload policies with a short slot lease (`in-flight`: 3 in flight, lease 1 s;
 * `queued`: burst 5, 10/s, waits up to 1000 ms). Driven over IPC by overload-fleet.ts (bundled
 * with esbuild, started by contention-fleet.ts's startWorker); every time it reports is
 * `performance.timeOrigin + now()`, one clock for every process of the machine.
 *
 * Parent -> worker: { type: 'concurrent', identity, clients, runMs } (each client loops: check,
 * hold 5..25 ms, release), { type: 'queued', identity, checks } (all at once), { type: 'hold',
 * identity, slots } (take slots and keep them), { type: 'probe', identity } (one check),
 * { type: 'exit' }. Worker -> parent: { type: 'ready' } then one answer per message.
 */
import { Cluster, Redis } from 'ioredis';
import { createLimiter } from '../../packages/core/src/limiter/create-limiter.js';
import type { Limiter } from '../../packages/core/src/limiter/limiter.js';
import { RedisStore } from '../../packages/core/src/stores/redis-store.js';
import { OVERLOAD_POLICIES } from './overload-policies.js';

type Message =
  | {
      readonly type: 'concurrent';
      readonly identity: string;
      readonly clients: number;
      readonly runMs: number;
    }
  | { readonly type: 'queued'; readonly identity: string; readonly checks: number }
  | { readonly type: 'hold'; readonly identity: string; readonly slots: number }
  | { readonly type: 'probe'; readonly identity: string }
  | { readonly type: 'exit' };

// Started by contention-fleet.ts's startWorker: a `redis://` URL, or `cluster:host:port,...`.
const target = process.env.SLUICE_CONTENTION_URL ?? '';
const client = target.startsWith('cluster:')
  ? new Cluster(
      target
        .slice('cluster:'.length)
        .split(',')
        .map((hp) => {
          const [host, port] = hp.split(':');
          return { host: host as string, port: Number(port) };
        }),
      { scaleReads: 'master' },
    )
  : new Redis(target);
client.on('error', () => {});
const store = new RedisStore({ client });

/** One limiter per policy, made at its first use (a scenario uses one policy). */
const limiters = new Map<string, Limiter>();
function limiterFor(policyName: string): Limiter {
  let limiter = limiters.get(policyName);
  if (limiter === undefined) {
    limiter = createLimiter({
      policies: OVERLOAD_POLICIES.filter((policy) => policy.name === policyName),
      prefix: 'overload-test',
      store,
      timeoutMs: 2000,
      denyCache: false,
      breaker: false,
    });
    limiters.set(policyName, limiter);
  }
  return limiter;
}

/** Milliseconds on the machine's clock, comparable between processes. */
const now = (): number => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function send(message: unknown): void {
  process.send?.(message);
}

/** One client of a `concurrent` round: [admitted, ended] per request it got in, and its denials. */
async function concurrentClient(identity: string, untilMs: number) {
  const intervals: [number, number][] = [];
  let denied = 0;
  let unavailable = 0;
  while (now() < untilMs) {
    const limiter = limiterFor('in-flight');
    const decision = await limiter.check({ identity });
    if (decision.allowed) {
      const admittedAt = now();
      await sleep(5 + Math.floor(Math.random() * 20));
      intervals.push([admittedAt, now()]);
      await limiter.release(decision);
    } else {
      if (decision.outcome === 'unavailable') unavailable++;
      else denied++;
      await sleep(2);
    }
  }
  return { intervals, denied, unavailable };
}

async function handle(message: Message): Promise<void> {
  if (message.type === 'concurrent') {
    const untilMs = now() + message.runMs;
    const runs = await Promise.all(
      Array.from({ length: message.clients }, () => concurrentClient(message.identity, untilMs)),
    );
    send({
      type: 'concurrent',
      intervals: runs.flatMap((run) => run.intervals),
      denied: runs.reduce((sum, run) => sum + run.denied, 0),
      unavailable: runs.reduce((sum, run) => sum + run.unavailable, 0),
    });
  } else if (message.type === 'queued') {
    const sentAt = now();
    const decisions = await Promise.all(
      Array.from({ length: message.checks }, () =>
        limiterFor('queued')
          .check({ identity: message.identity })
          .then((decision) => ({
            outcome: decision.outcome,
            allowed: decision.allowed,
            atMs: now(),
          })),
      ),
    );
    send({ type: 'queued', sentAt, decisions });
  } else if (message.type === 'hold') {
    const takenFrom = now();
    const decisions = await Promise.all(
      Array.from({ length: message.slots }, () =>
        limiterFor('in-flight').check({ identity: message.identity }),
      ),
    );
    send({ type: 'hold', takenFrom, takenBy: now(), admitted: decisions.filter((d) => d.allowed).length });
  } else if (message.type === 'probe') {
    const limiter = limiterFor('in-flight');
    const decision = await limiter.check({ identity: message.identity });
    send({ type: 'probe', allowed: decision.allowed, outcome: decision.outcome, atMs: now() });
    if (decision.allowed) await limiter.release(decision);
  } else {
    await Promise.all([...limiters.values()].map((limiter) => limiter.close()));
    client.disconnect();
    process.exit(0);
  }
}

process.on('message', (message: Message) => {
  handle(message).catch((error: unknown) => send({ type: 'error', message: String(error) }));
});

void (async () => {
  if (client instanceof Cluster && client.status !== 'ready') {
    await new Promise<void>((resolve) => client.once('ready', () => resolve()));
  }
  await client.ping();
  send({ type: 'ready' });
})();
