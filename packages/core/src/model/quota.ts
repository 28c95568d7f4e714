/**
 * A policy's regional quota: admission from a share of a global budget assigned by a quota service
 * (Envoy's Rate Limit Quota Service), enforced in-process. The service is given, not built here:
 * `QuotaClient` of `@sluice/server` (Node, gRPC) is one; core holds no gRPC client.
 */

/** What a quota bucket decided for one request: within the share, over it, or no live assignment. */
export type QuotaTake = 'allowed' | 'denied' | 'unassigned';

/** One bucket of a quota service, as the limiter spends from it. */
export interface QuotaSourceBucket {
  /** Admits `cost` from the bucket's current share, in-process; counts it for the next report. */
  take(cost?: number): QuotaTake;
}

/** A quota service: the buckets it reports and receives shares for. */
export interface QuotaSource {
  /** The bucket named by `id` (subscribed on first use). */
  bucket(id: Readonly<Record<string, string>>): QuotaSourceBucket;
}

/**
 * A policy's quota, as the application writes it: `{ service, bucket }`. Every request of the
 * policy is admitted from the share `service` holds for `bucket` (one bucket for the policy, shared
 * by every region that reports it), no store call per request; with no live assignment (never
 * received, or expired after the service became unreachable) the policy's `failMode` decides.
 */
export interface QuotaInput {
  readonly service: QuotaSource;
  /** The bucket id: at least one pair, keys and values non-empty strings. */
  readonly bucket: Readonly<Record<string, string>>;
}

/** A validated quota. */
export interface CompiledQuota {
  readonly service: QuotaSource;
  readonly bucket: Readonly<Record<string, string>>;
}
