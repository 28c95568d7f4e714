/**
 * Closed-loop load driver for in-process benchmarks: `concurrency` workers each await
 * `op(i)` back to back for a warm-up and then a measured period. Latencies are kept in a
 * preallocated Float64Array (microseconds) so the driver allocates nothing per operation.
 */

const MAX_SAMPLES = 4_000_000;
const samples = new Float64Array(MAX_SAMPLES);

/**
 * Runs `op(seq)` with `concurrency` operations in flight.
 * @returns {Promise<{ ops: number, seconds: number, perSecond: number, p50Us: number, p99Us: number, errors: number, cpuUsPerOp: number }>}
 */
export async function runClosedLoop(op, { concurrency = 256, warmupMs = 500, durationMs = 3000 } = {}) {
  // Phases are read from the clock inside the workers, not from timers: an operation that
  // resolves without I/O (a local deny cache) never yields to the timer queue.
  let seq = 0;
  let count = 0;
  let errors = 0;
  let firstError;
  const measureFrom = performance.now() + warmupMs;
  const measureTo = measureFrom + durationMs;
  // CPU time of this process over the measured window: less sensitive to other load than throughput.
  let cpuFrom;
  let cpuTo;
  const worker = async () => {
    for (;;) {
      const t0 = performance.now();
      if (t0 >= measureTo) {
        cpuTo ??= process.cpuUsage();
        return;
      }
      if (t0 >= measureFrom) cpuFrom ??= process.cpuUsage();
      try {
        await op(seq++);
      } catch (error) {
        errors++;
        firstError ??= error;
      }
      if (t0 >= measureFrom) {
        const t1 = performance.now();
        if (t1 < measureTo) {
          if (count < MAX_SAMPLES) samples[count] = (t1 - t0) * 1000;
          count++;
        }
      }
    }
  };
  const workers = [];
  for (let w = 0; w < concurrency; w++) workers.push(worker());
  await Promise.all(workers);
  const seconds = durationMs / 1000;
  const kept = samples.subarray(0, Math.min(count, MAX_SAMPLES)).slice().sort();
  const q = (p) =>
    kept.length === 0
      ? Number.NaN
      : kept[Math.min(kept.length - 1, Math.max(0, Math.ceil(p * kept.length) - 1))];
  if (errors > 0 && errors >= count) throw firstError;
  const cpuUsTotal =
    cpuFrom && cpuTo ? cpuTo.user + cpuTo.system - (cpuFrom.user + cpuFrom.system) : Number.NaN;
  return {
    ops: count,
    /** Every operation started, warm-up included. */
    started: seq,
    seconds,
    perSecond: count / seconds,
    p50Us: q(0.5),
    p99Us: q(0.99),
    errors,
    cpuUsPerOp: count > 0 ? cpuUsTotal / count : Number.NaN,
  };
}
