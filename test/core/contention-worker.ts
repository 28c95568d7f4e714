/**
 * A contention worker: one OS process holding several Redis connections, each behind its own
 * limiter. Driven over IPC by contention.test.ts (bundled with esbuild, run with fork()).
 *
 * Parent -> worker: { type: 'round', policies, identity, checksPerConnection, prefix }, { type: 'go' },
 * { type: 'exit' }. Worker -> parent: { type: 'ready' }, { type: 'armed' }, { type: 'result', ... }.
 */
import { Redis } from 'ioredis';
import { createLimiter, type Limiter } from '../../packages/core/src/limiter/create-limiter.js';
import { RedisStore } from '../../packages/core/src/stores/redis-store.js';
import type { PolicyInput } from '../../packages/core/src/types.js';

interface Round {
  readonly type: 'round';
  readonly policies: PolicyInput[];
  readonly identity: string;
  readonly checksPerConnection: number;
  readonly prefix: string;
}

type Message = Round | { readonly type: 'go' } | { readonly type: 'exit' };

const url = process.env.SLUICE_CONTENTION_URL ?? '';
const connections = Number(process.env.SLUICE_CONTENTION_CONNECTIONS ?? '4');
const workerId = process.env.SLUICE_CONTENTION_WORKER ?? '0';

function send(message: unknown): void {
  process.send?.(message);
}

async function main(): Promise<void> {
  const clients = Array.from(
    { length: connections },
    (_, i) => new Redis(url, { connectionName: `sluice-contention-w${workerId}-p${process.pid}-c${i}` }),
  );
  await Promise.all(clients.map((c) => c.ping()));
  let limiters: Limiter[] = [];
  let round: Round | undefined;

  process.on('message', (message: Message) => {
    void (async () => {
      if (message.type === 'round') {
        round = message;
        limiters = clients.map((client) =>
          createLimiter({
            policies: message.policies,
            prefix: message.prefix,
            store: new RedisStore({ client }),
            timeoutMs: 30_000,
            denyCache: false,
            breaker: false,
          }),
        );
        send({ type: 'armed' });
      } else if (message.type === 'go' && round) {
        const { identity, checksPerConnection } = round;
        const started = performance.now();
        const decisions = await Promise.all(
          limiters.flatMap((limiter) =>
            Array.from({ length: checksPerConnection }, () => limiter.check({ identity })),
          ),
        );
        const count = (f: (d: (typeof decisions)[number]) => boolean) => decisions.filter(f).length;
        send({
          type: 'result',
          pid: process.pid,
          checks: decisions.length,
          admitted: count((d) => d.allowed),
          overLimit: count((d) => d.outcome === 'over_limit'),
          unavailable: count((d) => d.outcome === 'unavailable'),
          ms: performance.now() - started,
        });
      } else if (message.type === 'exit') {
        await Promise.all(clients.map((c) => c.quit()));
        process.exit(0);
      }
    })().catch((error: unknown) => {
      send({ type: 'error', message: String(error) });
    });
  });
  send({ type: 'ready' });
}

main().catch((error: unknown) => {
  send({ type: 'error', message: String(error) });
  process.exit(1);
});
