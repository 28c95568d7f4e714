/**
 * A contention worker: one OS process holding several Redis connections, each behind its own
 * limiter. Driven over IPC by contention.test.ts (bundled with esbuild, run with fork()).
 *
 * Parent -> worker: { type: 'round', policies, identity, checksPerConnection, prefix, ... }, { type: 'go' },
 * { type: 'exit' }. Worker -> parent: { type: 'ready' }, { type: 'armed' }, { type: 'result', ... }.
 *
 * A round fires all its checks at once, or in `waveCosts.length` waves one after another (each
 * wave concurrent on every connection, costs cycling through that wave's list), with or without
 * the deny cache, and with or without request ids (`requestIds`: check j of every connection
 * carries `rid-<j mod requestIds>`, so every process and connection sends the same ids).
 */
import { Redis } from 'ioredis';
import { createLimiter, type Limiter } from '../../packages/core/src/limiter/create-limiter.js';
import { RedisStore } from '../../packages/core/src/stores/redis-store.js';
import type { Decision, PolicyInput } from '../../packages/core/src/types.js';

interface Round {
  readonly type: 'round';
  readonly policies: PolicyInput[];
  readonly identity: string;
  readonly checksPerConnection: number;
  readonly prefix: string;
  /** Default false, as the exact-count rounds want: every check decided by Redis. */
  readonly denyCache?: boolean;
  /** One list of costs per wave; default one wave of cost 1. */
  readonly waveCosts?: number[][];
  readonly requestIds?: number;
  /** Reserve every check and settle each admitted one to this many units as soon as it is decided. */
  readonly settleTo?: number;
  /** Ms to wait between waves (default 0: the next wave starts when the last answered). */
  readonly waveGapMs?: number;
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
            denyCache: message.denyCache === true ? {} : false,
            breaker: false,
          }),
        );
        send({ type: 'armed' });
      } else if (message.type === 'go' && round) {
        const { identity, checksPerConnection, requestIds, settleTo } = round;
        const reserve = settleTo !== undefined;
        /** Settles in flight: started as each admitted decision arrives, while other checks run. */
        const settles: Promise<string>[] = [];
        const waves = round.waveCosts ?? [[1]];
        const perWave = Math.ceil(checksPerConnection / waves.length);
        const started = performance.now();
        const decisions: Decision[] = [];
        const costs: number[] = [];
        /** Per request id: [admitted, denied] answers. */
        const byRequest: Record<string, [number, number]> = {};
        for (const [w, waveCost] of waves.entries()) {
          if (w > 0 && round.waveGapMs !== undefined)
            await new Promise((r) => setTimeout(r, round?.waveGapMs));
          const count = Math.min(perWave, checksPerConnection - w * perWave);
          const wave = limiters.flatMap((limiter) =>
            Array.from({ length: count }, (_, j) => {
              const cost = waveCost[j % waveCost.length] ?? 1;
              const index = w * perWave + j;
              const requestId = requestIds === undefined ? undefined : `rid-${index % requestIds}`;
              return {
                limiter,
                cost,
                requestId,
                decision: limiter.check({ identity, cost, requestId, reserve }),
              };
            }),
          );
          for (const { limiter, cost, requestId, decision } of wave) {
            const d = await decision;
            if (reserve && d.allowed) settles.push(limiter.settle(d, settleTo));
            decisions.push(d);
            costs.push(cost);
            if (requestId !== undefined) {
              const tally = byRequest[requestId] ?? [0, 0];
              tally[d.allowed ? 0 : 1]++;
              byRequest[requestId] = tally;
            }
          }
        }
        const settled = await Promise.all(settles);
        const count = (f: (d: Decision) => boolean) => decisions.filter(f).length;
        send({
          type: 'result',
          pid: process.pid,
          checks: decisions.length,
          admitted: count((d) => d.allowed),
          unitsAdmitted: decisions.reduce((sum, d, i) => sum + (d.allowed ? (costs[i] ?? 0) : 0), 0),
          overLimit: count((d) => d.outcome === 'over_limit'),
          unavailable: count((d) => d.outcome === 'unavailable'),
          fromDenyCache: count((d) => d.source === 'deny-cache'),
          fromLease: count((d) => d.source === 'lease'),
          byRequest,
          settled: settled.filter((answer) => answer === 'settled').length,
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
