/**
 * The Rate Limit Quota Service, transport-free: a stream's usage reports in, its buckets' quota
 * assignments out. A report's domain is a config domain; a bucket id is matched as one descriptor
 * of its pairs sorted by key; the matched rule's `requests_per_unit` per `unit` is the bucket's
 * GLOBAL budget, split among every client that reports the bucket (lua/quota.lua through a
 * `QuotaTable`), and the client's share goes back as a token bucket that lives `ttlMs`.
 */
import { randomUUID } from 'node:crypto';
import type { QuotaTable } from '@sluice/core/adapter';
import { findRule } from '../config/match.js';
import { type RateLimitConfig, type Rule, UNIT_MS } from '../config/types.js';
import { counterKey } from '../plan.js';
import { withDeadline } from '../store-call.js';
import { QuotaStats } from './quota-stats.js';
import {
  durationOfMs,
  msOfDuration,
  type RlqsBucketAction,
  type RlqsBucketId,
  type RlqsBucketUsage,
  RlqsReportError,
  type RlqsReports,
  type RlqsResponse,
  type RlqsStrategy,
} from './rlqs-types.js';

/** What the quota service is built from. */
export interface QuotaServiceOptions {
  /** The config in force (read at each report: a reload applies from the next one). */
  readonly config: () => RateLimitConfig;
  /** Where assignments live: Redis (shared by every server on it) or this process. */
  readonly table: QuotaTable;
  /** `assignment_time_to_live` of every assignment, ms. */
  readonly ttlMs: number;
  /** Key prefix of the buckets' state (`CACHE_KEY_PREFIX` + `sluice-rlqs`). */
  readonly prefix: string;
  /** Deadline of one table call, ms. */
  readonly timeoutMs: number;
  /** Told after each table call whether the store answered. */
  readonly onStoreResult?: (ok: boolean) => void;
  /** ms since the epoch (metrics). */
  readonly clock?: () => number;
}

/** Largest demand the table takes, requests per unit. */
const MAX_DEMAND = 1e12 - 1;
/** `TokenBucket.max_tokens` is a uint32. */
const MAX_TOKENS = 4_294_967_295;
/** A client id given in the `x-sluice-quota-client` metadata: visible ASCII, at most 128 characters. */
const CLIENT_ID = /^[\x21-\x7e]{1,128}$/;

/** The metadata key naming a client across streams (a restarted stream keeps its share). */
export const QUOTA_CLIENT_METADATA = 'x-sluice-quota-client';

/** Why `clientId` cannot name a quota client, or undefined when it can. */
export function quotaClientIdProblem(clientId: string): string | undefined {
  return CLIENT_ID.test(clientId) ? undefined : 'must be 1 to 128 visible ASCII characters (no spaces)';
}

/** A bucket a stream reported, for its departure. */
interface Reported {
  readonly rule: Rule;
  readonly key: string;
}

/** Assigns shares of each bucket's budget to the clients that report it. */
export class QuotaService {
  readonly stats: QuotaStats;

  constructor(readonly options: QuotaServiceOptions) {
    this.stats = new QuotaStats(options.clock);
  }

  /**
   * A stream of one client. `clientId` (from `x-sluice-quota-client`) names the client across
   * streams; unset, the stream is a client of its own.
   *
   * @throws RlqsReportError for a malformed client id
   */
  openStream(clientId?: string): QuotaStream {
    const problem = clientId === undefined ? undefined : quotaClientIdProblem(clientId);
    if (problem !== undefined) {
      this.stats.refuse();
      throw new RlqsReportError(`${QUOTA_CLIENT_METADATA} ${problem}`);
    }
    return new QuotaStream(this, clientId ?? randomUUID());
  }
}

/** A whole number of requests from a uint64 as proto-loader gives it (a decimal string). */
function countOf(value: string | number, field: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < 0) throw new RlqsReportError(`${field} must be a count, got ${value}`);
  return n;
}

/** The bucket's pairs sorted by key, checked non-empty. */
function entriesOf(bucketId: RlqsBucketId | null, at: string): { key: string; value: string }[] {
  const pairs = Object.entries(bucketId?.bucket ?? {});
  if (pairs.length === 0) throw new RlqsReportError(`${at}.bucket_id must hold at least one pair`);
  for (const [key, value] of pairs) {
    if (key === '' || value === '')
      throw new RlqsReportError(`${at}.bucket_id keys and values must not be empty`);
  }
  pairs.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return pairs.map(([key, value]) => ({ key, value }));
}

/** A checked usage: its entries, its requests and the time they took. */
interface Usage {
  readonly bucketId: RlqsBucketId;
  readonly entries: { key: string; value: string }[];
  readonly requests: number;
  readonly elapsedMs: number;
}

/** Checks every usage of a report before any is assigned: a bad one refuses the whole report. */
function checkUsages(usages: readonly RlqsBucketUsage[]): Usage[] {
  if (usages.length === 0) throw new RlqsReportError('bucket_quota_usages must not be empty');
  return usages.map((usage, i) => {
    const at = `bucket_quota_usages[${i}]`;
    const entries = entriesOf(usage.bucket_id, at);
    const elapsedMs = usage.time_elapsed === null ? Number.NaN : msOfDuration(usage.time_elapsed);
    if (!(elapsedMs > 0)) throw new RlqsReportError(`${at}.time_elapsed must be above zero`);
    const requests =
      countOf(usage.num_requests_allowed, `${at}.num_requests_allowed`) +
      countOf(usage.num_requests_denied, `${at}.num_requests_denied`);
    return { bucketId: usage.bucket_id as RlqsBucketId, entries, requests, elapsedMs };
  });
}

/** A share as a token bucket refilled each unit; 0 denies everything. */
function shareStrategy(share: number, unitMs: number): RlqsStrategy {
  if (share === 0) return { blanket_rule: 'DENY_ALL' };
  const tokens = Math.min(share, MAX_TOKENS);
  return {
    token_bucket: {
      max_tokens: tokens,
      tokens_per_fill: { value: tokens },
      fill_interval: durationOfMs(unitMs),
    },
  };
}

/** One client's stream: its domain (set by its first report) and the buckets it reported. */
export class QuotaStream {
  private domain: string | undefined;
  private readonly reported = new Map<string, Reported>();
  private readonly streamId = randomUUID();

  constructor(
    private readonly service: QuotaService,
    readonly clientId: string,
  ) {}

  /**
   * Answers one report: an action per bucket, in report order; a bucket whose assignment the store
   * could not record gets none (the client keeps its last assignment until its TTL).
   *
   * @throws RlqsReportError for a malformed report (nothing of it is recorded)
   */
  async answer(reports: RlqsReports): Promise<RlqsResponse> {
    let usages: Usage[];
    try {
      usages = this.check(reports);
    } catch (error) {
      this.service.stats.refuse();
      throw error;
    }
    const config = this.service.options.config();
    const actions: RlqsBucketAction[] = [];
    for (const usage of usages) {
      const action = await this.assign(config, this.domain as string, usage);
      if (action !== undefined) actions.push(action);
    }
    return { bucket_action: actions };
  }

  private check(reports: RlqsReports): Usage[] {
    const domain = reports.domain === '' ? this.domain : reports.domain;
    if (domain === undefined) throw new RlqsReportError('the first report of a stream must name its domain');
    if (this.domain !== undefined && domain !== this.domain) {
      throw new RlqsReportError('a stream keeps the domain of its first report (open another stream)');
    }
    const usages = checkUsages(reports.bucket_quota_usages);
    this.domain = domain;
    return usages;
  }

  private async assign(
    config: RateLimitConfig,
    domain: string,
    usage: Usage,
  ): Promise<RlqsBucketAction | undefined> {
    const bucket_id = usage.bucketId;
    const match = findRule(config, domain, usage.entries);
    if (match === undefined) return { bucket_id, abandon_action: {} };
    const { rule } = match;
    const { ttlMs } = this.service.options;
    const assignment = (rate_limit_strategy: RlqsStrategy): RlqsBucketAction => ({
      bucket_id,
      quota_assignment_action: { assignment_time_to_live: durationOfMs(ttlMs), rate_limit_strategy },
    });
    if (rule.unlimited || rule.shadow) return assignment({ blanket_rule: 'ALLOW_ALL' });
    if (rule.unit === undefined || rule.requestsPerUnit === 0)
      return assignment({ blanket_rule: 'DENY_ALL' });
    const unitMs = UNIT_MS[rule.unit];
    const key = counterKey(this.service.options.prefix, domain, match.counterEntries);
    const demand = Math.min(MAX_DEMAND, Math.ceil((usage.requests * unitMs) / usage.elapsedMs));
    const { table, timeoutMs, onStoreResult } = this.service.options;
    let share: number;
    try {
      const report = { clientId: this.clientId, budget: rule.requestsPerUnit, demand, ttlMs };
      share = (await withDeadline(table.report(key, report), timeoutMs)).share;
      onStoreResult?.(true);
    } catch {
      onStoreResult?.(false);
      return undefined;
    }
    this.reported.set(key, { rule, key });
    this.service.stats.assign(this.streamId, key, rule, share, demand, ttlMs);
    return assignment(shareStrategy(share, unitMs));
  }

  /**
   * The stream ended: the client leaves each bucket it reported (its shares count until they
   * expire, then go back to the others). Never rejects: a store failure leaves them to expire.
   */
  async close(): Promise<void> {
    this.service.stats.forget(this.streamId);
    const { table, timeoutMs, onStoreResult } = this.service.options;
    await Promise.all(
      [...this.reported.values()].map(({ key }) =>
        withDeadline(table.leave(key, this.clientId), timeoutMs).then(
          () => onStoreResult?.(true),
          () => onStoreResult?.(false),
        ),
      ),
    );
    this.reported.clear();
  }
}
