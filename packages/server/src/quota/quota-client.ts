/**
 * A Node data plane of the Rate Limit Quota Service: one `StreamRateLimitQuotas` stream, a usage
 * report every `reportIntervalMs` for each bucket it enforces, and local admission from the bucket's
 * current assignment (a token bucket, or a blanket rule): no call per request. An assignment lives
 * its `assignment_time_to_live` from the moment the report it answers was sent (never later than
 * the server counts it); with none live, `take` answers `unassigned` and the caller's fail mode decides.
 * It is a `QuotaSource`: a policy's `quota: { service: client, bucket }` admits from it (core).
 * A broken stream is reopened every `reportIntervalMs`; assignments are kept until they expire.
 */
import {
  type Client,
  type ClientDuplexStream,
  credentials,
  Metadata,
  makeClientConstructor,
} from '@grpc/grpc-js';
import type { QuotaSource, QuotaSourceBucket } from '@sluice/core/adapter';
import { rateLimitQuotaServiceDefinition } from '../protos.js';
import { QUOTA_CLIENT_METADATA, quotaClientIdProblem } from './quota-service.js';
import { durationOfMs, msOfDuration, type RlqsReports, type RlqsResponse } from './rlqs-types.js';

/** Options of a `QuotaClient`. */
export interface QuotaClientOptions {
  /** The server, `host:port`. */
  readonly address: string;
  /** The config domain the buckets are matched in. */
  readonly domain: string;
  /** Names this client across streams (a reconnect keeps its share); default: one per stream. */
  readonly clientId?: string;
  /** How often usage is reported, ms (default 1000). */
  readonly reportIntervalMs?: number;
  /** ms since the epoch (tests). */
  readonly clock?: () => number;
}

/** What `take` decided: admitted, turned away by the share, or no live assignment. */
export type QuotaVerdict = 'allowed' | 'denied' | 'unassigned';

/** One bucket's live assignment as the client enforces it. */
interface Assignment {
  /** `blanket`: everything allowed or denied; else a token bucket of `maxTokens` refilled at `perMs`. */
  readonly blanket?: 'ALLOW_ALL' | 'DENY_ALL';
  readonly maxTokens: number;
  readonly perMs: number;
  /** The share in requests per `fill_interval` (0 for a blanket rule). */
  readonly share: number;
  readonly expiresAtMs: number;
}

/** A bucket the client enforces. */
export class QuotaBucket implements QuotaSourceBucket {
  allowed = 0;
  denied = 0;
  assignment: Assignment | undefined;
  private tokens = 0;
  private atMs = 0;

  constructor(
    readonly id: Readonly<Record<string, string>>,
    private readonly clock: () => number,
  ) {}

  /** Admits `cost` from the live assignment; counts the request for the next report. */
  take(cost = 1): QuotaVerdict {
    const now = this.clock();
    const a = this.assignment;
    if (a === undefined || a.expiresAtMs <= now) {
      this.allowed += cost;
      return 'unassigned';
    }
    let ok: boolean;
    if (a.blanket !== undefined) ok = a.blanket === 'ALLOW_ALL';
    else {
      this.tokens = Math.min(a.maxTokens, this.tokens + (now - this.atMs) * a.perMs);
      this.atMs = now;
      ok = this.tokens >= cost;
      if (ok) this.tokens -= cost;
    }
    if (ok) this.allowed += cost;
    else this.denied += cost;
    return ok ? 'allowed' : 'denied';
  }

  /** The share now (requests per fill interval), undefined with no live assignment. */
  share(): number | undefined {
    const a = this.assignment;
    return a === undefined || a.expiresAtMs <= this.clock() ? undefined : a.share;
  }

  /**
   * Applies a new assignment: the tokens carry over, capped at the new size; a first one (or one
   * after an expiry or a blanket rule) starts empty, so what a client admits over any time T is at
   * most its bucket's size plus its shares over T, however often its assignments start anew.
   */
  apply(next: Assignment): void {
    const now = this.clock();
    const previous = this.assignment;
    if (previous === undefined || previous.expiresAtMs <= now || previous.blanket !== undefined) {
      this.tokens = 0;
    } else {
      this.tokens = Math.min(next.maxTokens, this.tokens + (now - this.atMs) * previous.perMs);
    }
    this.atMs = now;
    this.assignment = next;
  }
}

type Stream = ClientDuplexStream<RlqsReports, RlqsResponse>;

/** A gRPC client of `RateLimitQuotaService` on `address` (`host:port`, plaintext). */
export function quotaServiceClient(address: string): Client {
  const QuotaServiceClient = makeClientConstructor(
    rateLimitQuotaServiceDefinition(),
    'RateLimitQuotaService',
  );
  return new QuotaServiceClient(address, credentials.createInsecure());
}

/** Opens `StreamRateLimitQuotas` on `client`, named by `clientId` (`x-sluice-quota-client`) when given. */
export function openQuotaStream(client: Client, clientId?: string): Stream {
  const metadata = new Metadata();
  if (clientId !== undefined) metadata.set(QUOTA_CLIENT_METADATA, clientId);
  return (client as unknown as { StreamRateLimitQuotas(m: Metadata): Stream }).StreamRateLimitQuotas(
    metadata,
  );
}

/** Throws a TypeError naming the first bad option and its value. */
function checkClientOptions(options: QuotaClientOptions): void {
  const fail = (name: string, value: unknown, rule: string): never => {
    throw new TypeError(`QuotaClient: "${name}" ${rule}, got ${JSON.stringify(value)}`);
  };
  if (typeof options.address !== 'string' || !/^[^\s]+:\d+$/.test(options.address))
    fail('address', options.address, 'must be host:port');
  if (typeof options.domain !== 'string' || options.domain === '')
    fail('domain', options.domain, 'must be a non-empty string');
  const problem = options.clientId === undefined ? undefined : quotaClientIdProblem(options.clientId);
  if (problem !== undefined) fail('clientId', options.clientId, problem);
  const interval = options.reportIntervalMs;
  if (interval !== undefined && !(Number.isFinite(interval) && interval >= 10))
    fail('reportIntervalMs', interval, 'must be a number of ms, at least 10');
}

/** Sorted `k=v` pairs: one bucket's identity within the client. */
function bucketName(id: Readonly<Record<string, string>>): string {
  return JSON.stringify(Object.entries(id).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** A Rate Limit Quota Service client (see the module's doc). */
export class QuotaClient implements QuotaSource {
  private readonly buckets = new Map<string, QuotaBucket>();
  private readonly client: Client;
  private readonly clock: () => number;
  private readonly intervalMs: number;
  private stream: Stream | undefined;
  private lastReportMs: number;
  /** When each report still unanswered was sent, oldest first: an answer lives from its report. */
  private sentAtMs: number[] = [];
  private readonly timer: NodeJS.Timeout;
  private closed = false;

  constructor(private readonly options: QuotaClientOptions) {
    this.clock = options.clock ?? Date.now;
    this.intervalMs = options.reportIntervalMs ?? 1000;
    checkClientOptions(options);
    this.client = quotaServiceClient(options.address);
    this.lastReportMs = this.clock();
    this.timer = setInterval(() => this.report(), this.intervalMs);
    this.timer.unref();
  }

  /** The bucket for `id`, subscribed at once (its first report goes now). */
  bucket(id: Readonly<Record<string, string>>): QuotaBucket {
    const name = bucketName(id);
    let bucket = this.buckets.get(name);
    if (bucket === undefined) {
      bucket = new QuotaBucket(id, this.clock);
      this.buckets.set(name, bucket);
      this.report();
    }
    return bucket;
  }

  /** Sends one report of every bucket's usage since the last (a stream is opened when none is). */
  report(): void {
    if (this.closed || this.buckets.size === 0) return;
    const now = this.clock();
    const elapsedMs = Math.max(1, now - this.lastReportMs);
    this.lastReportMs = now;
    const stream = this.stream ?? this.open();
    const usages = [...this.buckets.values()].map((b) => {
      const usage = {
        bucket_id: { bucket: { ...b.id } },
        time_elapsed: durationOfMs(elapsedMs),
        num_requests_allowed: String(b.allowed),
        num_requests_denied: String(b.denied),
      };
      b.allowed = 0;
      b.denied = 0;
      return usage;
    });
    this.sentAtMs.push(now);
    stream.write({ domain: this.options.domain, bucket_quota_usages: usages });
  }

  private open(): Stream {
    const stream = openQuotaStream(this.client, this.options.clientId);
    this.sentAtMs = [];
    stream.on('data', (response: RlqsResponse) => this.receive(response));
    const broken = (): void => {
      if (this.stream === stream) this.stream = undefined;
    };
    stream.on('error', broken);
    stream.on('end', broken);
    stream.on('close', broken);
    this.stream = stream;
    return stream;
  }

  private receive(response: RlqsResponse): void {
    const sentAtMs = this.sentAtMs.shift() ?? this.clock();
    for (const action of response.bucket_action) {
      const bucket = this.buckets.get(bucketName(action.bucket_id.bucket));
      if (bucket === undefined) continue;
      if (!('quota_assignment_action' in action) || action.quota_assignment_action == null) {
        bucket.assignment = undefined;
        continue;
      }
      const { assignment_time_to_live: ttl, rate_limit_strategy: strategy } = action.quota_assignment_action;
      const expiresAtMs = sentAtMs + msOfDuration(ttl);
      if ('token_bucket' in strategy && strategy.token_bucket != null) {
        const tb = strategy.token_bucket;
        const share = Number(tb.tokens_per_fill?.value ?? tb.max_tokens);
        bucket.apply({
          maxTokens: tb.max_tokens,
          perMs: share / msOfDuration(tb.fill_interval),
          share,
          expiresAtMs,
        });
      } else if ('blanket_rule' in strategy) {
        bucket.apply({ blanket: strategy.blanket_rule, maxTokens: 0, perMs: 0, share: 0, expiresAtMs });
      }
    }
  }

  /** Stops reporting and closes the stream (the server then gives the shares back at their expiry). */
  close(): void {
    this.closed = true;
    clearInterval(this.timer);
    this.stream?.end();
    this.stream = undefined;
    this.client.close();
  }
}
