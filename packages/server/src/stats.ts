/**
 * envoyproxy/ratelimit's counters as Prometheus series: per rule (`total_hits`, `over_limit`,
 * `near_limit`, `within_limit`, `shadow_mode`, labelled by domain and the rule's config path, never
 * a descriptor value from a request) and per service (config loads, store and service errors,
 * global shadow mode).
 */
import { type MetricFamily, renderFamilies } from '@sluice/core/adapter';
import type { Rule } from './config/types.js';

/** The per-rule counters, named as the reference names them. */
export const RULE_STATS = ['total_hits', 'over_limit', 'near_limit', 'within_limit', 'shadow_mode'] as const;
/** One per-rule counter. */
export type RuleStat = (typeof RULE_STATS)[number];

/** The service counters. */
export const SERVICE_STATS = {
  config_load_success: 'config files loaded',
  config_load_error: 'config loads refused (the previous config stays in force)',
  redis_error: 'store calls that failed or missed their deadline',
  service_error: 'requests refused as malformed (empty domain or descriptors)',
  global_shadow_mode: 'over-limit answers turned OK by SHADOW_MODE',
} as const;
/** One service counter. */
export type ServiceStat = keyof typeof SERVICE_STATS;

const RULE_HELP: Record<RuleStat, string> = {
  total_hits: 'hits asked for, per rule',
  over_limit: 'hits over the limit, per rule',
  near_limit: 'hits above NEAR_LIMIT_RATIO of the limit, per rule',
  within_limit: 'hits within the limit, per rule',
  shadow_mode: 'over-limit hits answered OK by the rule shadow_mode',
};

/**
 * In-process counters, rendered as Prometheus text (`render`) or read as metric families
 * (`families`: what a prom-client registry collects from each worker, summed across workers).
 */
export class ServiceStats {
  private readonly rules = new Map<
    string,
    { labels: { domain: string; rule: string }; counts: Record<RuleStat, number> }
  >();
  private readonly service: Record<ServiceStat, number> = {
    config_load_success: 0,
    config_load_error: 0,
    redis_error: 0,
    service_error: 0,
    global_shadow_mode: 0,
  };
  /** More metric families listed after the service's (the quota service's figures). */
  private readonly sources: (() => MetricFamily[])[] = [];

  /** Reports every rule of a newly loaded config at 0 (series exist before the first hit). */
  declareRules(rules: readonly Rule[]): void {
    for (const rule of rules) this.ruleCounts(rule);
  }

  private ruleCounts(rule: Rule): Record<RuleStat, number> {
    const id = `${rule.domain}\u0000${rule.id}`;
    let entry = this.rules.get(id);
    if (entry === undefined) {
      entry = {
        labels: { domain: rule.domain, rule: rule.id },
        counts: { total_hits: 0, over_limit: 0, near_limit: 0, within_limit: 0, shadow_mode: 0 },
      };
      this.rules.set(id, entry);
    }
    return entry.counts;
  }

  /** Adds `n` to a rule's counter. */
  addRule(rule: Rule, stat: RuleStat, n: number): void {
    if (n > 0) this.ruleCounts(rule)[stat] += n;
  }

  /** Adds one to a service counter. */
  addService(stat: ServiceStat): void {
    this.service[stat] += 1;
  }

  /** The value of a service counter (tests, logs). */
  serviceCount(stat: ServiceStat): number {
    return this.service[stat];
  }

  /** Every counter as metric families (the per-rule ones first, then the service's). */
  families(): MetricFamily[] {
    const rules = [...this.rules.values()];
    const families: MetricFamily[] = RULE_STATS.map((stat) => ({
      name: `ratelimit_service_rate_limit_${stat}`,
      help: RULE_HELP[stat],
      type: 'counter',
      samples: rules.map(({ labels, counts }) => ({ labels, value: counts[stat] })),
    }));
    for (const stat of Object.keys(SERVICE_STATS) as ServiceStat[]) {
      families.push({
        name: `ratelimit_service_${stat}`,
        help: SERVICE_STATS[stat],
        type: 'counter',
        samples: [{ value: this.service[stat] }],
      });
    }
    for (const source of this.sources) families.push(...source());
    return families;
  }

  /** Adds metric families listed after the service's own counters. */
  addSource(families: () => MetricFamily[]): void {
    this.sources.push(families);
  }

  /** Prometheus text exposition of every counter. */
  render(): string {
    return renderFamilies(this.families());
  }
}
