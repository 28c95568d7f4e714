/**
 * Open-loop HTTP load: requests are sent at a fixed arrival rate whatever the server does, so a
 * server that falls behind builds a queue instead of slowing the load down (a closed loop such
 * as autocannon waits for each answer and hides that). Each request's latency runs from the
 * moment it was due, not from when it could be sent, so time spent queued on the client side
 * counts too (no coordinated omission). Loopback only.
 */
import { readFileSync } from 'node:fs';
import { Pool } from 'undici';
import { quantileSorted } from './stats.mjs';

/** A request sent this many ms after it was due counts as late (the timer ticks every ~1 ms). */
const LATE_MS = 5;

/** Clock ticks per second of /proc/<pid>/stat (USER_HZ; 100 on Linux). */
const USER_HZ = 100;

/** CPU seconds (user + system) a process has used so far, from /proc; NaN where unreadable. */
export function processCpuSeconds(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces) start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / USER_HZ;
  } catch {
    return Number.NaN;
  }
}

/**
 * Sends `GET path` to `origin` at `ratePerSecond` for `warmupMs + durationMs`; requests due in
 * the last `durationMs` are measured. `headersAt(i)` gives request i's headers. A request not
 * answered within `timeoutMs`, a connection error, or one that would exceed `maxInFlight`
 * outstanding requests (the client's backlog; then it is not sent) counts as an error.
 * @returns {Promise<{ offeredPerSecond: number, measured: number, answeredPerSecond: number,
 *   byStatus: Record<string, number>, errors: number, errorShare: number,
 *   p50Ms: number, p95Ms: number, p99Ms: number, maxMs: number, lateShare: number,
 *   admittedAll: number }>} (`admittedAll`: 2xx answers of all requests, the warm-up's included)
 */
export async function runOpenLoop({
  origin,
  path,
  ratePerSecond,
  durationMs,
  warmupMs = 500,
  headersAt,
  timeoutMs = 2000,
  connections = 64,
  maxInFlight = 20_000,
}) {
  const pool = new Pool(origin, { connections, pipelining: 1, keepAliveTimeout: 10_000 });
  const intervalMs = 1000 / ratePerSecond;
  const total = Math.ceil(((warmupMs + durationMs) * ratePerSecond) / 1000);
  const firstMeasured = Math.ceil((warmupMs * ratePerSecond) / 1000);
  const latencies = new Float64Array(Math.max(0, total - firstMeasured));
  const byStatus = {};
  let answered = 0;
  // 2xx answers of every request, the warm-up's too (what the run's store calls served).
  let admittedAll = 0;
  let errors = 0;
  let inFlight = 0;
  let next = 0;
  // Requests sent more than LATE_MS after they were due: the generator itself could not keep up.
  let late = 0;
  const start = performance.now();
  let settleAll;
  const allSettled = new Promise((resolve) => {
    settleAll = resolve;
  });
  let finished = 0;

  const done = (i, dueAt, status) => {
    inFlight--;
    finished++;
    if (status >= 200 && status < 300) admittedAll++;
    if (i >= firstMeasured) {
      if (status === undefined) errors++;
      else {
        byStatus[status] = (byStatus[status] ?? 0) + 1;
        latencies[answered++] = performance.now() - dueAt;
      }
    }
    if (finished === total) settleAll();
  };

  const send = (i, dueAt) => {
    if (inFlight >= maxInFlight) {
      inFlight++;
      done(i, dueAt, undefined);
      return;
    }
    inFlight++;
    pool
      .request({
        path,
        method: 'GET',
        headers: headersAt(i),
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      })
      .then(
        async ({ statusCode, body }) => {
          await body.dump();
          done(i, dueAt, statusCode);
        },
        () => done(i, dueAt, undefined),
      );
  };

  // Every millisecond, send all requests that are due (a timer, not a busy loop: on a 2-core
  // machine a spinning generator would take CPU from the server it measures).
  await new Promise((resolve) => {
    const tick = () => {
      const now = performance.now();
      while (next < total) {
        const dueAt = start + next * intervalMs;
        if (dueAt > now) break;
        if (next >= firstMeasured && now - dueAt > LATE_MS) late++;
        send(next, dueAt);
        next++;
      }
      if (next < total) setTimeout(tick, 1);
      else resolve();
    };
    tick();
  });
  await allSettled;
  await pool.close();

  const measured = total - firstMeasured;
  const sorted = latencies.subarray(0, answered).sort();
  return {
    offeredPerSecond: ratePerSecond,
    measured,
    answeredPerSecond: (answered * 1000) / durationMs,
    byStatus,
    errors,
    errorShare: measured === 0 ? 0 : errors / measured,
    p50Ms: quantileSorted(sorted, 0.5),
    p95Ms: quantileSorted(sorted, 0.95),
    p99Ms: quantileSorted(sorted, 0.99),
    maxMs: answered === 0 ? Number.NaN : sorted[answered - 1],
    lateShare: measured === 0 ? 0 : late / measured,
    admittedAll,
  };
}

/**
 * Warms a fresh server up: `requests` requests with `concurrency` in flight, each answered before
 * the next is sent (closed loop), so the server has run its code that many times whatever the
 * machine's load. Resolves when all are answered; rejects when one fails.
 */
export async function warmUp({ origin, path, requests, concurrency = 16, headersAt }) {
  const pool = new Pool(origin, { connections: concurrency, pipelining: 1 });
  let next = 0;
  const worker = async () => {
    while (next < requests) {
      const i = next++;
      const { body } = await pool.request({ path, method: 'GET', headers: headersAt(i) });
      await body.dump();
    }
  };
  try {
    await Promise.all(Array.from({ length: concurrency }, worker));
  } finally {
    await pool.close();
  }
}
