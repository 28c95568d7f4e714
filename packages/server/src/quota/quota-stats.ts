/**
 * Regional quota metrics, per rule (labelled by domain and the rule's config path, never a bucket's
 * values, which may hold identities): the shares this server assigned, the demand its clients
 * reported and how many clients report the rule here; reports and refused reports as counters.
 */
import { escapeHelp, escapeLabelValue } from '@sluice/core/adapter';
import type { Rule } from '../config/types.js';

/** What one client last heard for one bucket. */
interface Assigned {
  readonly labels: string;
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

  constructor(private readonly clock: () => number = Date.now) {}

  private static labels(rule: Rule): string {
    return `domain="${escapeLabelValue(rule.domain)}",rule="${escapeLabelValue(rule.id)}"`;
  }

  /** Records what `stream` was assigned for one bucket, live for `ttlMs`. */
  assign(stream: string, bucketKey: string, rule: Rule, share: number, demand: number, ttlMs: number): void {
    const labels = QuotaStats.labels(rule);
    let buckets = this.assigned.get(stream);
    if (buckets === undefined) {
      buckets = new Map();
      this.assigned.set(stream, buckets);
    }
    buckets.set(bucketKey, { labels, share, demand, untilMs: this.clock() + ttlMs });
    this.reports.set(labels, (this.reports.get(labels) ?? 0) + 1);
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

  /** Prometheus text of the quota figures. */
  render(): string {
    const now = this.clock();
    const sums = new Map<string, { assigned: number; demand: number; clients: number }>();
    for (const labels of this.reports.keys()) sums.set(labels, { assigned: 0, demand: 0, clients: 0 });
    for (const buckets of this.assigned.values()) {
      for (const a of buckets.values()) {
        if (a.untilMs <= now) continue;
        const sum = sums.get(a.labels) as { assigned: number; demand: number; clients: number };
        sum.assigned += a.share;
        sum.demand += a.demand;
        sum.clients += 1;
      }
    }
    const lines: string[] = [];
    const field = {
      sluice_quota_assigned: 'assigned',
      sluice_quota_demand: 'demand',
      sluice_quota_clients: 'clients',
    } as const;
    for (const [name, help] of Object.entries(GAUGES) as [keyof typeof GAUGES, string][]) {
      lines.push(`# HELP ${name} ${escapeHelp(help)}`, `# TYPE ${name} gauge`);
      for (const [labels, sum] of sums) lines.push(`${name}{${labels}} ${sum[field[name]]}`);
    }
    lines.push(
      '# HELP sluice_quota_reports_total bucket reports answered, per rule',
      '# TYPE sluice_quota_reports_total counter',
    );
    for (const [labels, n] of this.reports) lines.push(`sluice_quota_reports_total{${labels}} ${n}`);
    lines.push(
      '# HELP sluice_quota_refused_total usage reports refused as malformed (INVALID_ARGUMENT)',
      '# TYPE sluice_quota_refused_total counter',
    );
    lines.push(`sluice_quota_refused_total ${this.refused}`);
    return `${lines.join('\n')}\n`;
  }
}
