/**
 * Envoy's Rate Limit Quota Service messages (`envoy.service.rate_limit_quota.v3`) as the service
 * handles them: the shapes @grpc/proto-loader gives with `keepCase`, `enums: String`,
 * `longs: String`, `defaults`, `oneofs`.
 */
import type { RlsDuration } from '../rls-types.js';

/** `BucketId`: a map of non-empty strings. */
export interface RlqsBucketId {
  readonly bucket: Readonly<Record<string, string>>;
}

/** `RateLimitQuotaUsageReports.BucketQuotaUsage`. */
export interface RlqsBucketUsage {
  readonly bucket_id: RlqsBucketId | null;
  readonly time_elapsed: { readonly seconds: string | number; readonly nanos: number } | null;
  readonly num_requests_allowed: string | number;
  readonly num_requests_denied: string | number;
}

/** `RateLimitQuotaUsageReports`. */
export interface RlqsReports {
  readonly domain: string;
  readonly bucket_quota_usages: readonly RlqsBucketUsage[];
}

/** `envoy.type.v3.RateLimitStrategy`: one of a blanket rule or a token bucket. */
export type RlqsStrategy =
  | { readonly blanket_rule: 'ALLOW_ALL' | 'DENY_ALL' }
  | {
      readonly token_bucket: {
        readonly max_tokens: number;
        readonly tokens_per_fill: { readonly value: number };
        readonly fill_interval: RlsDuration;
      };
    };

/** `RateLimitQuotaResponse.BucketAction`. */
export type RlqsBucketAction =
  | {
      readonly bucket_id: RlqsBucketId;
      readonly quota_assignment_action: {
        readonly assignment_time_to_live: RlsDuration;
        readonly rate_limit_strategy: RlqsStrategy;
      };
    }
  | { readonly bucket_id: RlqsBucketId; readonly abandon_action: Record<string, never> };

/** `RateLimitQuotaResponse`. */
export interface RlqsResponse {
  readonly bucket_action: readonly RlqsBucketAction[];
}

/** A report the service refuses (no domain, no usages, a zero elapsed time...): gRPC INVALID_ARGUMENT. */
export class RlqsReportError extends Error {
  override readonly name = 'RlqsReportError';
}

/** A duration of whole ms as `google.protobuf.Duration`. */
export function durationOfMs(ms: number): RlsDuration {
  const seconds = Math.floor(ms / 1000);
  return { seconds: String(seconds), nanos: (ms - seconds * 1000) * 1_000_000 };
}

/** A `google.protobuf.Duration` in ms (NaN when malformed). */
export function msOfDuration(duration: {
  readonly seconds: string | number;
  readonly nanos: number;
}): number {
  return Number(duration.seconds) * 1000 + Number(duration.nanos) / 1_000_000;
}
