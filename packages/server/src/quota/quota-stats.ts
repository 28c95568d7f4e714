/**
 * Regional quota metrics, per rule (labelled by domain and the rule's config path, never a bucket's
 * values, which may hold identities): the shares this server assigned, the demand its clients
 * reported and how many clients report the rule here; reports and refused reports as counters.
 */
import { type MetricFamily, renderFamilies } from '@sluice/core/adapter';
import type { Rule } from '../config/types.js';

/** What one client last heard for one bucket. */
interface Assigned {
  /** The rule's key in `labels`. */
  readonly key: string;
  readonly share: number;
  readonly demand: number;
  readonly untilMs: number;
}

const GAUGES = {
  sluice_quota_assigned: 'shares assigned by this server to its live clients, requests per the rule unit',
  sluice_quota_demand: 'demand its live clients reported, requests per the rule unit',
  sluice_quota_clients: 'client buckets reporting the rule to this server',
} as const;

/** In-process quota figures, rendered as Prometheus text. */
export class QuotaStats {
  /** By stream, then by bucket key. */
  private readonly assigned = new Map<string, Map<string, Assigned>>();
  private readonly reports = new Map<string, number>();
  private refused = 0;
  /** The labels of each rule seen, by `domain\u0000rule id`. */
  private readonly labels = new Map<string, { domain: string; rule: string }>();

  constructor(private readonly clock: () => number = Date.now) {}

  private keyOf(rule: Rule): string {
    const key = `${rule.domain}\u0000${rule.id}`;
    if (!this.labels.has(key)) this.labels.set(key, { domain: rule.domain, rule: rule.id });
    return key;
  }

  /** Records what `stream` was assigned for one bucket, live for `ttlMs`. */
  assign(stream: string, bucketKey: string, rule: Rule, share: number, demand: number, ttlMs: number): void {
    const key = this.keyOf(rule);
    let buckets = this.assigned.get(stream);
    if (buckets === undefined) {
      buckets = new Map();
      this.assigned.set(stream, buckets);
    }
    buckets.set(bucketKey, { key, share, demand, untilMs: this.clock() + ttlMs });
    this.reports.set(key, (this.reports.get(key) ?? 0) + 1);
  }

  /** Forgets a closed stream. */
  forget(stream: string): void {
    this.assigned.delete(stream);
  }

  /** Counts a refused report. */
  refuse(): void {
    this.refused += 1;
  }

  /** Refused reports so far (tests). */
  get refusedReports(): number {
    return this.refused;
  }

  /** The quota figures as metric families. */
  families(): MetricFamily[] {
    const now = this.clock();
    const sums = new Map<string, { assigned: number; demand: number; clients: number }>();
    for (const key of this.reports.keys()) sums.set(key, { assigned: 0, demand: 0, clients: 0 });
    for (const buckets of this.assigned.values()) {
      for (const a of buckets.values()) {
        if (a.untilMs <= now) continue;
        const sum = sums.get(a.key) as { assigned: number; demand: number; clients: number };
        sum.assigned += a.share;
        sum.demand += a.demand;
        sum.clients += 1;
      }
    }
    const gauge = (name: keyof typeof GAUGES, field: 'assigned' | 'demand' | 'clients'): MetricFamily => ({
      name,
      help: GAUGES[name],
      type: 'gauge',
      samples: [...sums].map(([key, sum]) => ({ labels: this.labels.get(key), value: sum[field] })),
    });
    return [
      gauge('sluice_quota_assigned', 'assigned'),
      gauge('sluice_quota_demand', 'demand'),
      gauge('sluice_quota_clients', 'clients'),
      {
        name: 'sluice_quota_reports_total',
        help: 'bucket reports answered, per rule',
        type: 'counter',
        samples: [...this.reports].map(([key, value]) => ({ labels: this.labels.get(key), value })),
      },
      {
        name: 'sluice_quota_refused_total',
        help: 'usage reports refused as malformed (INVALID_ARGUMENT)',
        type: 'counter',
        samples: [{ value: this.refused }],
      },
    ];
  }

  /** Prometheus text of the quota figures. */
  render(): string {
    return renderFamilies(this.families());
  }
}
