/**
 * How late this process' timers fire while a test runs. On a shared, loaded machine a 100 ms
 * deadline can only fire as early as the event loop allows; latency bounds add this lag so they
 * test the limiter, not the machine.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';

/** Starts measuring; `stop()` returns the p99 and max timer lag in milliseconds. */
export function measureEventLoopLag(): { stop(): { p99Ms: number; maxMs: number } } {
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  return {
    stop() {
      histogram.disable();
      // The histogram counts the resolution interval itself; report only the lateness.
      const lateness = (ns: number) => Math.max(0, ns / 1e6 - 10);
      return { p99Ms: lateness(histogram.percentile(99)), maxMs: lateness(histogram.max) };
    },
  };
}
