/**
 * Sluice's metrics in a prom-client registry: for apps that already serve prom-client's
 * `/metrics`, no second endpoint. Each family becomes one metric object of the shape a prom-client
 * `Registry` collects (`name`, `help`, `type`, `aggregator`, `get()`), read fresh at every scrape.
 * Core does not import prom-client (it stays an optional peer): any registry with
 * `registerMetric` fits, prom-client 14 and 15 among them.
 */
import type { MetricFamily, MetricSample } from './metrics-families.js';

/** The part of a prom-client `Registry` this needs. */
export interface PromClientRegistry {
  registerMetric(metric: never): void;
  removeSingleMetric?(name: string): void;
}

/** A family's values in prom-client's shape: labels, value and (for histogram parts) the full name. */
interface PromClientValue {
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
  readonly metricName?: string;
}

/** One family as a prom-client metric. */
interface PromClientMetric {
  readonly name: string;
  readonly help: string;
  readonly type: MetricFamily['type'];
  /** How prom-client's `AggregatorRegistry` merges cluster workers: counters summed, gauges max. */
  readonly aggregator: 'sum' | 'max';
  get(): Promise<{
    name: string;
    help: string;
    type: MetricFamily['type'];
    aggregator: 'sum' | 'max';
    values: PromClientValue[];
  }>;
  reset(): void;
}

/** What `registerPromClient` answers: the names registered, and how to take them out again. */
export interface PromClientRegistration {
  /** The metric names registered (the family names). */
  readonly names: readonly string[];
  /** Removes every metric registered here from the registry. */
  unregister(): void;
}

function promValue(family: MetricFamily, sample: MetricSample): PromClientValue {
  const labels = sample.labels ?? {};
  return sample.suffix === undefined
    ? { labels, value: sample.value }
    : { labels, value: sample.value, metricName: `${family.name}${sample.suffix}` };
}

/** One family as a prom-client metric, read fresh from `metrics` at every scrape. */
function familyMetric(metrics: { families(): MetricFamily[] }, family: MetricFamily, onScrape: () => void) {
  const { name, help, type } = family;
  const aggregator: PromClientMetric['aggregator'] = type === 'gauge' ? 'max' : 'sum';
  const metric: PromClientMetric = {
    name,
    help,
    type,
    aggregator,
    async get() {
      onScrape();
      const current = metrics.families().find((f) => f.name === name);
      const values = current === undefined ? [] : current.samples.map((s) => promValue(current, s));
      return { name, help, type, aggregator, values };
    },
    reset() {
      // Sluice's counts belong to its limiters; a registry reset leaves them.
    },
  };
  return metric;
}

/**
 * Registers every family of `metrics` (a `createMetrics()` recorder) in a prom-client registry,
 * read fresh at every scrape. A family that first appears later (the first in-process decision,
 * a limiter attached later) is registered at the next scrape and served from the one after.
 * Gauges are aggregated with `max` across cluster workers, counters and histograms summed.
 *
 * @throws TypeError when `registry` has no `registerMetric`
 */
export function registerPromClient(
  metrics: { families(): MetricFamily[] },
  registry: PromClientRegistry,
): PromClientRegistration {
  if (typeof registry !== 'object' || registry === null || typeof registry.registerMetric !== 'function') {
    throw new TypeError('registerPromClient: "registry" must be a prom-client Registry (registerMetric)');
  }
  const names: string[] = [];
  const sync = (): void => {
    for (const family of metrics.families()) {
      if (names.includes(family.name)) continue;
      registry.registerMetric(familyMetric(metrics, family, sync) as never);
      names.push(family.name);
    }
  };
  sync();
  return {
    names,
    unregister() {
      for (const name of names.splice(0)) registry.removeSingleMetric?.(name);
    },
  };
}
