/**
 * Metric families: the samples `createMetrics` holds, in one shape that both the Prometheus text
 * renderer and the prom-client collector read. Labels hold policy names, outcomes, causes and
 * sources only: never an identity, a key or a path.
 */
import {
  type LimiterCounters,
  type OverloadCounts,
  REMEMBERED_DENIAL_SOURCES,
  type SecondsHistogram,
  STORE_ERROR_CAUSES,
} from '../limiter/counters.js';

/** One sample of a family: an optional name suffix (`_bucket`, `_sum`, `_count`), labels, a value. */
export interface MetricSample {
  readonly suffix?: '_bucket' | '_sum' | '_count';
  readonly labels?: Readonly<Record<string, string>>;
  readonly value: number;
}

/** A metric family as Prometheus groups it: one name, help, type and its samples. */
export interface MetricFamily {
  readonly name: string;
  readonly help: string;
  readonly type: 'counter' | 'gauge' | 'histogram';
  readonly samples: readonly MetricSample[];
}

/** What `createMetrics` reads of an attached limiter at each render. */
export interface CountingSource {
  readonly counters?: LimiterCounters;
  /** `open`, `half-open` or `closed`. */
  readonly breakerState?: string;
}

/** Escapes a label value: `\`, `"` and newline. */
export function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/** Escapes HELP text: `\` and newline. */
export function escapeHelp(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

/** Formats a sample value: integers as such, `+Inf`, `-Inf`, `NaN`. */
export function formatValue(value: number): string {
  if (value === Number.POSITIVE_INFINITY) return '+Inf';
  if (value === Number.NEGATIVE_INFINITY) return '-Inf';
  if (Number.isNaN(value)) return 'NaN';
  return String(value);
}

/** What a cumulative histogram holds: counts per bucket (each `<= bound`), a count and a sum. */
export interface HistogramSnapshot {
  readonly bounds: readonly number[];
  readonly bucketCounts: readonly number[];
  readonly count: number;
  readonly sumSeconds: number;
}

/** The samples of a cumulative histogram: one `_bucket` per bound and `+Inf`, `_sum`, `_count`. */
export function histogramSamples(h: HistogramSnapshot): MetricSample[] {
  const samples: MetricSample[] = h.bounds.map((bound, i) => ({
    suffix: '_bucket',
    labels: { le: formatValue(bound) },
    value: h.bucketCounts[i] as number,
  }));
  samples.push(
    { suffix: '_bucket', labels: { le: '+Inf' }, value: h.count },
    { suffix: '_sum', value: h.sumSeconds },
    { suffix: '_count', value: h.count },
  );
  return samples;
}

/** The families of the attached limiters' counters, summed over them; none when no limiter counts. */
export function limiterFamilies(sources: Iterable<CountingSource>): MetricFamily[] {
  const counting = [...sources].filter((s) => s.counters !== undefined);
  if (counting.length === 0) return [];
  const all = counting.map((s) => s.counters as LimiterCounters);
  const sum = (read: (c: LimiterCounters) => number): number => all.reduce((n, c) => n + read(c), 0);
  const families: MetricFamily[] = [
    counter(
      'sluice_store_calls_total',
      'Store calls the limiter made (an open breaker answering included).',
      [{ value: sum((c) => c.store.calls) }],
    ),
    counter(
      'sluice_store_errors_total',
      'Store calls that failed, by cause (timeout, error, breaker_open); noscript_reload was recovered by EVAL.',
      STORE_ERROR_CAUSES.map((cause) => ({
        labels: { cause },
        value:
          cause === 'noscript_reload'
            ? sum((c) => c.scriptStats()?.noscriptReloads ?? 0)
            : sum((c) => c.store.errors[cause]),
      })),
    ),
    {
      name: 'sluice_store_duration_seconds',
      help: 'Latency of store calls that reached the store.',
      type: 'histogram',
      samples: histogramSamples(mergedHistogram(all.map((c) => c.store.durations))),
    },
    gauge('sluice_store_timeout_seconds', 'The deadline of every store call (the largest over limiters).', [
      { value: Math.max(...all.map((c) => c.timeoutSeconds)) },
    ]),
    gauge(
      'sluice_breaker_open',
      'Limiters whose store breaker is open or half-open (not calling the store).',
      [{ value: counting.filter((s) => s.breakerState !== undefined && s.breakerState !== 'closed').length }],
    ),
  ];
  const scripts = all.map((c) => c.scriptStats()).filter((s) => s !== undefined);
  if (scripts.length > 0) {
    families.push(
      counter(
        'sluice_script_calls_total',
        'Calls of the decide script (each carries one or more decisions).',
        [{ value: scripts.reduce((n, s) => n + s.calls, 0) }],
      ),
      counter('sluice_script_decisions_total', 'Decisions carried by decide-script calls.', [
        { value: scripts.reduce((n, s) => n + s.decisions, 0) },
      ]),
    );
  }
  families.push(
    counter('sluice_lease_units_taken_total', 'Units the store granted to lease takes.', [
      { value: sum((c) => c.leases.taken) },
    ]),
    counter('sluice_lease_units_spent_total', 'Lease units admitted requests spent in-process.', [
      { value: sum((c) => c.leases.spent) },
    ]),
    counter(
      'sluice_lease_units_dropped_total',
      'Lease units given up unspent (expired, evicted or reset): budget under-used, never over-admitted.',
      [{ value: sum((c) => c.leases.dropped) }],
    ),
    counter(
      'sluice_remembered_denials_total',
      'Store denials remembered in-process, by source (deny-cache, lease).',
      REMEMBERED_DENIAL_SOURCES.map((source) => ({
        labels: { source },
        value: sum((c) => c.remembered[source]),
      })),
    ),
    ...overloadFamilies(all),
  );
  return families;
}

function counter(name: string, help: string, samples: MetricSample[]): MetricFamily {
  return { name, help, type: 'counter', samples };
}

function gauge(name: string, help: string, samples: MetricSample[]): MetricFamily {
  return { name, help, type: 'gauge', samples };
}

/** One histogram summing `histograms` (same bounds). */
function mergedHistogram(histograms: readonly SecondsHistogram[]): HistogramSnapshot {
  const first = histograms[0] as SecondsHistogram;
  if (histograms.length === 1) return first;
  const bucketCounts = first.bounds.map((_, i) =>
    histograms.reduce((n, h) => n + (h.bucketCounts[i] as number), 0),
  );
  return {
    bounds: first.bounds,
    bucketCounts,
    count: histograms.reduce((n, h) => n + h.count, 0),
    sumSeconds: histograms.reduce((n, h) => n + h.sumSeconds, 0),
  };
}

/** Renders families in the Prometheus text exposition format 0.0.4 (ends with a newline). */
export function renderFamilies(families: readonly MetricFamily[]): string {
  const lines: string[] = [];
  for (const family of families) {
    lines.push(`# HELP ${family.name} ${escapeHelp(family.help)}`, `# TYPE ${family.name} ${family.type}`);
    for (const sample of family.samples) lines.push(sampleLine(family.name, sample));
  }
  return `${lines.join('\n')}\n`;
}

function sampleLine(name: string, sample: MetricSample): string {
  const labels = sample.labels === undefined ? [] : Object.entries(sample.labels);
  const labelText =
    labels.length === 0 ? '' : `{${labels.map(([k, v]) => `${k}="${escapeLabelValue(v)}"`).join(',')}}`;
  return `${name}${sample.suffix ?? ''}${labelText} ${formatValue(sample.value)}`;
}

/** One overload count: its metric name, type, help, and which map of `OverloadCounts` holds it. */
interface OverloadMetric {
  readonly name: string;
  readonly type: 'counter' | 'gauge';
  readonly help: string;
  readonly read: (counts: OverloadCounts) => ReadonlyMap<string, number>;
}

const OVERLOAD_METRICS: readonly OverloadMetric[] = [
  {
    name: 'sluice_concurrency_slots_in_use',
    type: 'gauge',
    help: 'Concurrency slots this process holds now (requests in flight), by policy.',
    read: (c) => c.held,
  },
  {
    name: 'sluice_concurrency_slots_reclaimed_total',
    type: 'counter',
    help: 'Expired concurrency slots (their instance died) the store took back while deciding, by policy.',
    read: (c) => c.reclaimed,
  },
  {
    name: 'sluice_concurrency_slots_lost_total',
    type: 'counter',
    help: 'Held concurrency slots a renewal found gone (lease ran out first), by policy.',
    read: (c) => c.lost,
  },
  {
    name: 'sluice_waiting_requests',
    type: 'gauge',
    help: 'Checks waiting for their reserved turn now, by policy.',
    read: (c) => c.waiting,
  },
  {
    name: 'sluice_waits_admitted_total',
    type: 'counter',
    help: 'Checks admitted at their reserved turn after waiting, by policy.',
    read: (c) => c.admittedAfterWait,
  },
  {
    name: 'sluice_waits_cancelled_total',
    type: 'counter',
    help: 'Waits cancelled (client gone, signal, close): their units were given back, by policy.',
    read: (c) => c.cancelledWaits,
  },
];

/** The overload families of `all`, each with one sample per policy seen; none when no policy was. */
export function overloadFamilies(all: readonly LimiterCounters[]): MetricFamily[] {
  const families: MetricFamily[] = [];
  for (const metric of OVERLOAD_METRICS) {
    const byPolicy = new Map<string, number>();
    for (const counters of all) {
      for (const [policy, value] of metric.read(counters.overload)) {
        byPolicy.set(policy, (byPolicy.get(policy) ?? 0) + value);
      }
    }
    if (byPolicy.size === 0) continue;
    const samples: MetricSample[] = [...byPolicy].map(([policy, value]) => ({ labels: { policy }, value }));
    families.push({ name: metric.name, help: metric.help, type: metric.type, samples });
  }
  return families;
}
