/** Reading Prometheus text in the metrics tests, and the limiter most of them count. Test support only. */
import { createLimiter, type Limiter } from '../limiter/create-limiter.js';
import { MemoryStore } from '../stores/memory-store.js';
import { createMetrics, type SluiceMetrics } from './metrics.js';

/** Parses Prometheus text 0.0.4 samples into name{labels} -> value; throws on a line that is not one. */
export function samplesOf(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{.*\})?) (\S+)$/.exec(line);
    if (m === null) throw new Error(`not a sample line: ${line}`);
    out.set(m[1] as string, m[2] === '+Inf' ? Number.POSITIVE_INFINITY : Number(m[2]));
  }
  return out;
}

/** The sample lines (no comments) of an exposition text, sorted. */
export function sampleLines(text: string): string[] {
  return text
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('#'))
    .sort();
}

/** A limiter with one fixed window of 10 a minute on a memory store, its clock stopped, and metrics attached. */
export function tenPerMinute(): { limiter: Limiter; metrics: SluiceMetrics } {
  const clock = () => 1_764_400_200_000;
  const limiter = createLimiter({
    policies: [{ name: 'ten', algorithm: 'fixed-window', limit: 10, window: '1m' }],
    store: new MemoryStore({ clock }),
    clock,
  });
  return { limiter, metrics: createMetrics({ meter: false, limiter }) };
}
