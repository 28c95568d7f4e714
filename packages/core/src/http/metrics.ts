/**
 * Decision metrics: `sluice_decisions_total{policy,outcome}`, the histogram
 * `sluice_decision_duration_seconds`, `sluice_in_process_decisions_total{source}` (decisions a
 * lease, a local stage or the deny cache made without a store call) and
 * `sluice_live_key_evictions_total` (keys an in-process
 * store dropped while live: forgotten usage), kept in process and rendered in the Prometheus text
 * exposition format 0.0.4, and recorded through the OpenTelemetry metrics API (a no-op
 * until an SDK is registered). Labels are the policy name and the outcome, nothing else:
 * never an identity, a key or a path.
 */
import { type Counter, type Histogram, type Meter, type MeterProvider, metrics } from '@opentelemetry/api';
import type { DecisionEvent, MetricOutcome } from '../types.js';
import { InProcessDecisionCounts } from './metrics-sources.js';

/** The content type of `render()`'s output. */
export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** Default histogram bucket upper bounds, in seconds: 0.5 ms to 1 s. */
export const DEFAULT_DURATION_BUCKETS_SECONDS: readonly number[] = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
];

/** Every value of the `outcome` label. */
export const METRIC_OUTCOMES: readonly MetricOutcome[] = [
  'allowed',
  'over_limit',
  'shadow_over_limit',
  'fail_open',
  'fail_closed',
];

/** Something decisions can be subscribed on: a `Limiter`. */
export interface DecisionSource {
  onDecision(listener: (event: DecisionEvent) => void): () => void;
  /** Keys its in-process stores evicted while live (a `Limiter` has it); read at each render. */
  readonly liveEvictions?: number;
}

/** Options of `createMetrics`. */
export interface MetricsOptions {
  /**
   * The OpenTelemetry meter to record through, or `false` for none. Default: the global
   * meter `@sluice/core`, looked up again whenever the global provider changes, so an SDK
   * registered after `createMetrics` is picked up.
   */
  readonly meter?: Meter | false;
  /** Histogram bucket upper bounds in seconds, ascending. */
  readonly bucketsSeconds?: readonly number[];
  /** Subscribe to this limiter's decisions right away. */
  readonly limiter?: DecisionSource;
  /** Policies to report at 0 for every outcome before their first decision. */
  readonly policies?: readonly string[];
}

/** Every option of `createMetrics` (checked against `MetricsOptions` at compile time). */
export const METRICS_OPTION_NAMES = Object.freeze([
  'meter',
  'bucketsSeconds',
  'limiter',
  'policies',
] as const);
type MetricsNameMismatch =
  | Exclude<keyof MetricsOptions, (typeof METRICS_OPTION_NAMES)[number]>
  | Exclude<(typeof METRICS_OPTION_NAMES)[number], keyof MetricsOptions>;
const metricsNamesMatch: [MetricsNameMismatch] extends [never] ? true : { mismatch: MetricsNameMismatch } =
  true;
void metricsNamesMatch;

/** Decision metrics, in process and through OpenTelemetry. */
export interface SluiceMetrics {
  /** Counts one decision. Bound: pass it as is, `limiter.onDecision(metrics.record)`. */
  readonly record: (event: DecisionEvent) => void;
  /** The Prometheus text exposition of everything recorded so far. */
  render(): string;
  /** `text/plain; version=0.0.4; charset=utf-8`. */
  readonly contentType: string;
  /** Subscribes to a limiter's decisions; returns the unsubscribe function. */
  attach(source: DecisionSource): () => void;
  /** Unsubscribes from every limiter attached so far. */
  close(): void;
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
function formatValue(value: number): string {
  if (value === Number.POSITIVE_INFINITY) return '+Inf';
  if (value === Number.NEGATIVE_INFINITY) return '-Inf';
  if (Number.isNaN(value)) return 'NaN';
  return String(value);
}

interface OtelInstruments {
  readonly provider: MeterProvider | undefined;
  readonly counter: Counter;
  readonly histogram: Histogram;
}

function instrumentsFor(
  meter: Meter,
  buckets: readonly number[],
  liveEvictions: () => number | undefined,
  provider?: MeterProvider,
): OtelInstruments {
  // A meter without observable instruments (a minimal stand-in) simply does not get this one.
  meter
    .createObservableCounter?.('sluice_live_key_evictions', {
      description: 'Keys evicted from an in-process store while their state was live (usage forgotten).',
      unit: '{key}',
    })
    ?.addCallback((result) => {
      const n = liveEvictions();
      if (n !== undefined) result.observe(n);
    });
  return {
    provider,
    // An OpenTelemetry Prometheus exporter renders these as sluice_decisions_total and
    // sluice_decision_duration_seconds.
    counter: meter.createCounter('sluice_decisions', {
      description: 'Rate-limit decisions by policy and outcome.',
      unit: '{decision}',
    }),
    histogram: meter.createHistogram('sluice_decision_duration', {
      description: 'Time to reach a rate-limit decision.',
      unit: 's',
      advice: { explicitBucketBoundaries: [...buckets] },
    }),
  };
}

/**
 * Creates a metrics recorder. Wire it to a limiter (`createMetrics({ limiter })`,
 * `metrics.attach(limiter)` or `limiter.onDecision(metrics.record)`) and serve
 * `render()` with `contentType` on `/metrics`.
 *
 * @throws TypeError when `bucketsSeconds` is not an ascending list of positive numbers
 */
export function createMetrics(options: MetricsOptions = {}): SluiceMetrics {
  const buckets = [...(options.bucketsSeconds ?? DEFAULT_DURATION_BUCKETS_SECONDS)];
  if (
    buckets.length === 0 ||
    buckets.some((b, i) => !Number.isFinite(b) || b <= 0 || (i > 0 && b <= buckets[i - 1]!))
  ) {
    throw new TypeError('createMetrics: "bucketsSeconds" must be ascending positive numbers');
  }

  // policy -> outcome -> count
  const counts = new Map<string, Map<MetricOutcome, number>>();
  const bucketCounts = new Array<number>(buckets.length).fill(0);
  let durationCount = 0;
  let durationSumSeconds = 0;
  const inProcess = new InProcessDecisionCounts();

  const counterFor = (policy: string): Map<MetricOutcome, number> => {
    let byOutcome = counts.get(policy);
    if (byOutcome === undefined) {
      byOutcome = new Map();
      counts.set(policy, byOutcome);
    }
    return byOutcome;
  };
  for (const policy of options.policies ?? []) {
    const byOutcome = counterFor(policy);
    for (const outcome of METRIC_OUTCOMES) byOutcome.set(outcome, 0);
  }

  /** Every attached source, for the live-eviction count read at render. */
  const sources = new Set<DecisionSource>();
  /** The sum over attached sources that count live evictions; undefined when none does. */
  const liveEvictions = (): number | undefined => {
    let total: number | undefined;
    for (const source of sources) {
      const n = source.liveEvictions;
      if (typeof n === 'number') total = (total ?? 0) + n;
    }
    return total;
  };

  let otel: OtelInstruments | undefined;
  const explicitMeter = options.meter;
  const instruments = (): OtelInstruments | undefined => {
    if (explicitMeter === false) return undefined;
    if (explicitMeter !== undefined) {
      otel ??= instrumentsFor(explicitMeter, buckets, liveEvictions);
      return otel;
    }
    const provider = metrics.getMeterProvider();
    if (otel === undefined || otel.provider !== provider) {
      otel = instrumentsFor(provider.getMeter('@sluice/core'), buckets, liveEvictions, provider);
    }
    return otel;
  };

  const record = (event: DecisionEvent): void => {
    const seconds = Number.isFinite(event.durationMs) && event.durationMs > 0 ? event.durationMs / 1000 : 0;
    for (const { policy, outcome } of event.metricOutcomes) {
      const byOutcome = counterFor(policy);
      byOutcome.set(outcome, (byOutcome.get(outcome) ?? 0) + 1);
    }
    durationCount++;
    durationSumSeconds += seconds;
    inProcess.record(event.source);
    for (let i = 0; i < buckets.length; i++) if (seconds <= buckets[i]!) bucketCounts[i]!++;

    const o = instruments();
    if (o !== undefined) {
      for (const { policy, outcome } of event.metricOutcomes) o.counter.add(1, { policy, outcome });
      o.histogram.record(seconds);
    }
  };

  const render = (): string => {
    const lines: string[] = [
      '# HELP sluice_decisions_total Rate-limit decisions by policy and outcome.',
      '# TYPE sluice_decisions_total counter',
    ];
    for (const policy of [...counts.keys()].sort()) {
      const byOutcome = counts.get(policy)!;
      for (const outcome of METRIC_OUTCOMES) {
        const n = byOutcome.get(outcome);
        if (n === undefined) continue;
        lines.push(
          `sluice_decisions_total{policy="${escapeLabelValue(policy)}",outcome="${outcome}"} ${formatValue(n)}`,
        );
      }
    }
    lines.push(
      '# HELP sluice_decision_duration_seconds Time to reach a rate-limit decision.',
      '# TYPE sluice_decision_duration_seconds histogram',
    );
    for (let i = 0; i < buckets.length; i++) {
      lines.push(
        `sluice_decision_duration_seconds_bucket{le="${formatValue(buckets[i]!)}"} ${bucketCounts[i]}`,
      );
    }
    lines.push(
      `sluice_decision_duration_seconds_bucket{le="+Inf"} ${durationCount}`,
      `sluice_decision_duration_seconds_sum ${formatValue(durationSumSeconds)}`,
      `sluice_decision_duration_seconds_count ${durationCount}`,
    );
    lines.push(...inProcess.lines());
    const evictions = liveEvictions();
    if (evictions !== undefined) {
      lines.push(
        '# HELP sluice_live_key_evictions_total Keys evicted from an in-process store while their state was live (usage forgotten).',
        '# TYPE sluice_live_key_evictions_total counter',
        `sluice_live_key_evictions_total ${formatValue(evictions)}`,
      );
    }
    return `${lines.join('\n')}\n`;
  };

  const subscriptions = new Set<() => void>();
  const attach = (source: DecisionSource): (() => void) => {
    const off = source.onDecision(record);
    sources.add(source);
    const unsubscribe = () => {
      if (subscriptions.delete(unsubscribe)) {
        off();
        sources.delete(source);
      }
    };
    subscriptions.add(unsubscribe);
    return unsubscribe;
  };
  if (options.limiter !== undefined) attach(options.limiter);

  return {
    record,
    render,
    contentType: PROMETHEUS_CONTENT_TYPE,
    attach,
    close(): void {
      for (const unsubscribe of [...subscriptions]) unsubscribe();
    },
  };
}
