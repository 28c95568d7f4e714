/**
 * Decision metrics: `sluice_decisions_total{policy,outcome}`, `sluice_near_limit_total{policy}`,
 * the histogram `sluice_decision_duration_seconds`, `sluice_in_process_decisions_total{source}`
 * (decisions a lease, a local stage or the deny cache made without a store call),
 * `sluice_live_key_evictions_total` (keys an in-process store dropped while live: forgotten
 * usage), and each attached limiter's counters (store calls and errors by cause, store latency,
 * script calls, lease units, remembered denials: see metrics-families.ts). Kept in process and
 * rendered in the Prometheus text exposition format 0.0.4 (or read by a prom-client registry,
 * see `registerPromClient`), and recorded through the OpenTelemetry metrics API (a no-op until
 * an SDK is registered). Labels are policy names, outcomes, causes and sources, nothing else:
 * never an identity, a key or a path.
 */
import { type Counter, type Histogram, type Meter, type MeterProvider, metrics } from '@opentelemetry/api';
import {
  DEFAULT_DURATION_BUCKETS_SECONDS,
  type LimiterCounters,
  SecondsHistogram,
} from '../limiter/counters.js';
import type { DecisionEvent, MetricOutcome } from '../types.js';
import { histogramSamples, limiterFamilies, type MetricFamily, renderFamilies } from './metrics-families.js';
import { InProcessDecisionCounts } from './metrics-sources.js';

export { escapeHelp, escapeLabelValue } from './metrics-families.js';
export { DEFAULT_DURATION_BUCKETS_SECONDS };

/** The content type of `render()`'s output. */
export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** Every value of the `outcome` label. */
export const METRIC_OUTCOMES: readonly MetricOutcome[] = [
  'allowed',
  'over_limit',
  'shadow_over_limit',
  'fail_open',
  'fail_closed',
];

/** Something decisions can be subscribed on: a `Limiter`. */
export interface DecisionEmitter {
  onDecision(listener: (event: DecisionEvent) => void): () => void;
  /** Keys its in-process stores evicted while live (a `Limiter` has it); read at each render. */
  readonly liveEvictions?: number;
  /** Store calls, lease units, remembered denials (a `Limiter` has them); read at each render. */
  readonly counters?: LimiterCounters;
  /** Its store breaker's state (a `Limiter` has it); read at each render. */
  readonly breakerState?: string;
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
  readonly limiter?: DecisionEmitter;
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
  /** Everything recorded so far as metric families (what `render` and the prom-client collector read). */
  families(): MetricFamily[];
  /** `text/plain; version=0.0.4; charset=utf-8`. */
  readonly contentType: string;
  /** Subscribes to a limiter's decisions; returns the unsubscribe function. */
  attach(source: DecisionEmitter): () => void;
  /** Unsubscribes from every limiter attached so far. */
  close(): void;
}

interface OtelInstruments {
  readonly provider: MeterProvider | undefined;
  readonly counter: Counter;
  readonly nearLimit: Counter;
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
    nearLimit: meter.createCounter('sluice_near_limit', {
      description: 'Decisions admitted with at most a fifth of the limit remaining, by policy.',
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
  // policy -> near-limit decisions
  const nearLimit = new Map<string, number>();
  const durations = new SecondsHistogram(buckets);
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
    nearLimit.set(policy, 0);
  }

  /** Every attached source, for the live-eviction count read at render. */
  const sources = new Set<DecisionEmitter>();
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
    for (const { policy, outcome, nearLimit: near } of event.metricOutcomes) {
      const byOutcome = counterFor(policy);
      byOutcome.set(outcome, (byOutcome.get(outcome) ?? 0) + 1);
      if (near === true) nearLimit.set(policy, (nearLimit.get(policy) ?? 0) + 1);
    }
    durations.observe(seconds);
    inProcess.record(event.source);

    const o = instruments();
    if (o !== undefined) {
      for (const { policy, outcome, nearLimit: near } of event.metricOutcomes) {
        o.counter.add(1, { policy, outcome });
        if (near === true) o.nearLimit.add(1, { policy });
      }
      o.histogram.record(seconds);
    }
  };

  const families = (): MetricFamily[] => {
    const policies = [...counts.keys()].sort();
    const decisions: MetricFamily = {
      name: 'sluice_decisions_total',
      help: 'Rate-limit decisions by policy and outcome.',
      type: 'counter',
      samples: policies.flatMap((policy) => {
        const byOutcome = counts.get(policy) as Map<MetricOutcome, number>;
        return METRIC_OUTCOMES.filter((outcome) => byOutcome.has(outcome)).map((outcome) => ({
          labels: { policy, outcome },
          value: byOutcome.get(outcome) as number,
        }));
      }),
    };
    const out: MetricFamily[] = [
      decisions,
      {
        name: 'sluice_near_limit_total',
        help: 'Decisions admitted with at most a fifth of the limit remaining, by policy.',
        type: 'counter',
        samples: [...nearLimit.keys()].sort().map((policy) => ({
          labels: { policy },
          value: nearLimit.get(policy) as number,
        })),
      },
      {
        name: 'sluice_decision_duration_seconds',
        help: 'Time to reach a rate-limit decision.',
        type: 'histogram',
        samples: histogramSamples(durations),
      },
    ];
    const fromSources = inProcess.family();
    if (fromSources !== undefined) out.push(fromSources);
    const evictions = liveEvictions();
    if (evictions !== undefined) {
      out.push({
        name: 'sluice_live_key_evictions_total',
        help: 'Keys evicted from an in-process store while their state was live (usage forgotten).',
        type: 'counter',
        samples: [{ value: evictions }],
      });
    }
    out.push(...limiterFamilies(sources));
    return out;
  };

  const subscriptions = new Set<() => void>();
  const attach = (source: DecisionEmitter): (() => void) => {
    const off = source.onDecision(record);
    sources.add(source);
    // Its store calls are timed from now on (a limiter nobody measures reads no clock per call).
    if (source.counters !== undefined) source.counters.store.timed = true;
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
    render: () => renderFamilies(families()),
    families,
    contentType: PROMETHEUS_CONTENT_TYPE,
    attach,
    close(): void {
      for (const unsubscribe of [...subscriptions]) unsubscribe();
    },
  };
}
