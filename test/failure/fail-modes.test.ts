/**
 * One real Redis behind the fault proxy. Under added latency, a blackhole and reset
 * connections: every decision returns within the deadline, `closed` denies as unavailable
 * (503 at the HTTP layer), `open` admits and reports `fail_open`, `local` keeps a bounded limit,
 * and the latency the limiter adds during the outage stays near the deadline.
 * The breaker's open / probe / close cycle is checked call by call.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createLimiter,
  createMetrics,
  createRedisStore,
  type Decision,
  type DecisionEvent,
  type EvalClient,
  RedisStore,
  toHttpVerdict,
} from '../cluster/core.js';
import { type FaultMode, type FaultProxy, startFaultProxy } from '../support/fault-proxy.js';
import { type RedisProcess, startRedis } from '../support/redis-server.js';
import { measureEventLoopLag } from './event-loop-lag.js';

const TIMEOUT_MS = 100;
/** Margins over the deadline, on top of this process' measured timer lag (a loaded machine). */
const P99_MARGIN_MS = 50;
const MAX_MARGIN_MS = 150;
const LOCAL_LIMIT = 10;

let redis: RedisProcess;
let proxy: FaultProxy;

beforeAll(async () => {
  redis = await startRedis();
  proxy = await startFaultProxy({ port: redis.port });
});
afterAll(async () => {
  await proxy?.close();
  await redis?.stop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function percentile(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? 0;
}

interface Fault {
  readonly name: string;
  apply(): void;
}

const FAULTS: readonly Fault[] = [
  {
    name: 'latency 400 ms each way',
    apply: () => proxy.setLatency(400),
  },
  { name: 'blackhole', apply: () => proxy.setMode('blackhole') },
  { name: 'reset connections', apply: () => proxy.setMode('reset') },
];

function heal(): void {
  proxy.setLatency(0);
  proxy.setMode('pass' satisfies FaultMode);
}

/** Fires `count` checks, one every `everyMs`, and returns each decision with its duration. */
async function steadyChecks(
  limiter: ReturnType<typeof createLimiter>,
  identity: string,
  count: number,
  everyMs: number,
): Promise<{ decision: Decision; durationMs: number }[]> {
  const runs: Promise<{ decision: Decision; durationMs: number }>[] = [];
  for (let i = 0; i < count; i++) {
    const t0 = performance.now();
    runs.push(
      limiter.check({ identity }).then((decision) => ({ decision, durationMs: performance.now() - t0 })),
    );
    await sleep(everyMs);
  }
  return Promise.all(runs);
}

/** Waits until `limiter` decides from the store again (breaker closed, connection back). */
async function untilStoreDecides(limiter: ReturnType<typeof createLimiter>, identity: string): Promise<void> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const d = await limiter.check({ identity });
    if (d.source === 'store') return;
    if (Date.now() > deadline)
      throw new Error(`store still not deciding after the fault was lifted (${d.source})`);
    await sleep(100);
  }
}

describe.each(FAULTS)('under $name', (fault) => {
  const figures: string[] = [];
  afterAll(() => {
    console.log(figures.join('\n'));
  });

  it('closed denies as unavailable, open admits as fail_open, local keeps a bounded limit: all within the deadline', async () => {
    const store = createRedisStore(proxy.url);
    const events: Record<string, DecisionEvent[]> = { closed: [], open: [], local: [] };
    const make = (failMode: 'closed' | 'open' | 'local') =>
      createLimiter({
        policies: [
          { name: `fm-${failMode}`, algorithm: 'token-bucket', limit: LOCAL_LIMIT, window: '1h', failMode },
        ],
        prefix: `fm-${fault.name.replace(/\W/g, '')}`,
        store,
        timeoutMs: TIMEOUT_MS,
        onDecision: (e) => events[failMode]!.push(e),
      });
    const closed = make('closed');
    const open = make('open');
    const local = make('local');
    const metrics = createMetrics({ meter: false });
    // Healthy first: the store decides (the first call also opens the connection).
    for (const l of [closed, open, local]) await untilStoreDecides(l, 'warm');
    for (const list of Object.values(events)) list.length = 0;
    const detach = [closed, open, local].map((l) => metrics.attach(l));

    fault.apply();
    const lagMeter = measureEventLoopLag();
    const [c, o, l] = await Promise.all([
      steadyChecks(closed, 'tenant', 40, 10),
      steadyChecks(open, 'tenant', 40, 10),
      steadyChecks(local, 'tenant', 40, 10),
    ]);
    const lag = lagMeter.stop();
    heal();
    for (const d of detach) d();

    for (const { decision } of c) {
      expect(decision.allowed).toBe(false);
      expect(decision.outcome).toBe('unavailable');
      expect(decision.source).toBe('fail-closed');
      // At the HTTP layer: 503, the limiter could not decide (not 429).
      expect(toHttpVerdict(decision).status).toBe(503);
    }
    expect(events.closed!.every((e) => e.metricOutcomes.every((m) => m.outcome === 'fail_closed'))).toBe(
      true,
    );
    for (const { decision } of o) {
      expect(decision.allowed).toBe(true);
      expect(decision.source).toBe('fail-open');
    }
    expect(events.open!.flatMap((e) => e.metricOutcomes.map((m) => m.outcome))).toEqual(
      Array(40).fill('fail_open'),
    );
    // local: the in-process limiter admits at most the policy's limit, then denies as over_limit.
    expect(l.every(({ decision }) => decision.source === 'local')).toBe(true);
    const localAdmitted = l.filter(({ decision }) => decision.allowed).length;
    expect(localAdmitted).toBe(LOCAL_LIMIT);
    expect(l.filter(({ decision }) => decision.outcome === 'over_limit')).toHaveLength(40 - LOCAL_LIMIT);

    const durations = [...c, ...o, ...l].map((r) => r.durationMs).sort((a, b) => a - b);
    const p50 = percentile(durations, 0.5);
    const p99 = percentile(durations, 0.99);
    const max = durations.at(-1)!;
    figures.push(
      `[failure] ${fault.name}: ${durations.length} decisions, added latency p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, max ${max.toFixed(1)} ms (deadline ${TIMEOUT_MS} ms); local admitted ${localAdmitted}/${l.length}; timer lag p99 ${lag.p99Ms.toFixed(0)} ms`,
    );
    expect(p99).toBeLessThanOrEqual(TIMEOUT_MS + P99_MARGIN_MS + lag.p99Ms);
    expect(max).toBeLessThanOrEqual(TIMEOUT_MS + MAX_MARGIN_MS + lag.maxMs);
    // Whatever the load: far from a TCP or connect timeout (seconds).
    expect(max).toBeLessThan(1000);

    // Lifted: every limiter decides from the store again.
    for (const limiter of [closed, open, local]) await untilStoreDecides(limiter, 'after');
    await store.close();
  });

  it('without a breaker every call waits for the deadline, and no longer', async () => {
    const store = createRedisStore(proxy.url);
    const limiter = createLimiter({
      policies: [{ name: 'nb', limit: 100, window: '1m', failMode: 'closed' }],
      prefix: 'nb',
      store,
      timeoutMs: TIMEOUT_MS,
      breaker: false,
    });
    await untilStoreDecides(limiter, 'warm');
    fault.apply();
    const lagMeter = measureEventLoopLag();
    const runs = await steadyChecks(limiter, 'tenant', 30, 10);
    const lag = lagMeter.stop();
    heal();
    const durations = runs.map((r) => r.durationMs).sort((a, b) => a - b);
    expect(runs.every((r) => r.decision.outcome === 'unavailable')).toBe(true);
    const p99 = percentile(durations, 0.99);
    figures.push(
      `[failure] ${fault.name}, no breaker: p50 ${percentile(durations, 0.5).toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, max ${durations.at(-1)!.toFixed(1)} ms; timer lag p99 ${lag.p99Ms.toFixed(0)} ms`,
    );
    // reset: the failure may come back faster than the deadline (connection refused); never later.
    expect(p99).toBeLessThanOrEqual(TIMEOUT_MS + P99_MARGIN_MS + lag.p99Ms);
    expect(p99).toBeLessThan(1000);
    if (fault.name !== 'reset connections') expect(durations[0]!).toBeGreaterThanOrEqual(TIMEOUT_MS - 5);
    await untilStoreDecides(limiter, 'after');
    await store.close();
  });
});

describe('the breaker', () => {
  it('opens after the threshold, stops calling Redis, lets one probe through per cool-down, closes on success', async () => {
    const client = new Redis({ host: '127.0.0.1', port: proxy.port });
    client.on('error', () => {});
    let calls = 0;
    const counting: EvalClient = {
      evalsha: (...args) => {
        calls++;
        return client.evalsha(...args);
      },
      eval: (...args) => client.eval(...args),
    };
    // The breaker's cool-down follows the limiter's clock: moved by hand, no sleeping. (The
    // store deadline runs on real timers; the store reads Redis TIME.)
    let nowMs = 1_800_000_000_000;
    const limiter = createLimiter({
      policies: [{ name: 'br', limit: 1000, window: '1m', failMode: 'closed' }],
      prefix: 'br',
      store: new RedisStore({ client: counting }),
      timeoutMs: TIMEOUT_MS,
      breaker: { failureThreshold: 3, cooldownMs: 500 },
      clock: () => nowMs,
    });
    await untilStoreDecides(limiter, 't');
    expect(limiter.breakerState).toBe('closed');
    calls = 0;

    proxy.setMode('blackhole');
    // Three failures, each at the deadline, open it.
    for (let i = 0; i < 3; i++) {
      const t0 = performance.now();
      expect((await limiter.check({ identity: 't' })).outcome).toBe('unavailable');
      expect(performance.now() - t0).toBeGreaterThanOrEqual(TIMEOUT_MS - 5);
    }
    expect(calls).toBe(3);
    expect(limiter.breakerState).toBe('open');

    // Open: answers at once without calling Redis: each decision is there before the next
    // turn of the event loop (no timer, no I/O), through the whole cool-down.
    for (const stepMs of [0, 100, 200, 199]) {
      nowMs += stepMs;
      const d = await Promise.race([
        limiter.check({ identity: 't' }),
        new Promise<'a later turn'>((r) => setImmediate(() => r('a later turn'))),
      ]);
      expect(d === 'a later turn' ? d : d.source).toBe('fail-closed');
      expect(limiter.breakerState).toBe('open');
    }
    expect(calls).toBe(3);

    // After the cool-down (500 ms by the limiter's clock): exactly one probe, which fails (still
    // blackholed) and re-opens it.
    nowMs += 1;
    expect(limiter.breakerState).toBe('half-open');
    const probes = await Promise.all([limiter.check({ identity: 't' }), limiter.check({ identity: 't' })]);
    expect(calls).toBe(4);
    expect(probes.every((d) => d.outcome === 'unavailable')).toBe(true);
    expect(limiter.breakerState).toBe('open');

    // Redis is back; the next probe, one cool-down after the failed one, succeeds and closes the breaker.
    proxy.setMode('pass');
    nowMs += 499;
    expect(limiter.breakerState).toBe('open');
    nowMs += 1;
    expect(limiter.breakerState).toBe('half-open');
    const probe = await limiter.check({ identity: 't' });
    expect(probe.source).toBe('store');
    expect(calls).toBe(5);
    expect(limiter.breakerState).toBe('closed');
    const after = await limiter.check({ identity: 't' });
    expect(after.source).toBe('store');
    expect(calls).toBe(6);
    client.disconnect();
  });
});
