/**
 * Envoy's RateLimitRequest and RateLimitResponse as the service handles them: the shapes
 * @grpc/proto-loader gives with `keepCase`, `enums: String`, `longs: String`, `defaults`.
 */

/** `RateLimitResponse.Code`. */
export type RlsCode = 'UNKNOWN' | 'OK' | 'OVER_LIMIT';

/** `RateLimitDescriptor` (envoy.extensions.common.ratelimit.v3). */
export interface RlsDescriptor {
  readonly entries: readonly { readonly key: string; readonly value: string }[];
  /** A limit override from Envoy's route config; absent or null when unset. */
  readonly limit?: { readonly requests_per_unit: number; readonly unit: string } | null;
  /** Per-descriptor hits (0 = look without charging); absent or null when unset. */
  readonly hits_addend?: { readonly value: string | number } | null;
}

/** `RateLimitRequest`. */
export interface RlsRequest {
  readonly domain: string;
  readonly descriptors: readonly RlsDescriptor[];
  /** 0 means 1. */
  readonly hits_addend: number;
}

/** `google.protobuf.Duration`. */
export interface RlsDuration {
  readonly seconds: string;
  readonly nanos: number;
}

/** `RateLimitResponse.DescriptorStatus`. */
export interface RlsDescriptorStatus {
  readonly code: RlsCode;
  readonly current_limit: {
    readonly name: string;
    readonly requests_per_unit: number;
    readonly unit: string;
  } | null;
  readonly limit_remaining: number;
  readonly duration_until_reset: RlsDuration | null;
}

/** `config.core.v3.HeaderValue`. */
export interface RlsHeader {
  readonly key: string;
  readonly value: string;
}

/** `RateLimitResponse`. */
export interface RlsResponse {
  readonly overall_code: RlsCode;
  readonly statuses: readonly RlsDescriptorStatus[];
  readonly response_headers_to_add: readonly RlsHeader[];
  readonly request_headers_to_add: readonly RlsHeader[];
  readonly raw_body: Uint8Array;
}

/** A request the service refuses (empty domain, no descriptors): gRPC INVALID_ARGUMENT, HTTP 400. */
export class RlsRequestError extends Error {
  override readonly name: string = 'RlsRequestError';
}

/** The store could not decide and a rule fails `closed`: gRPC UNAVAILABLE, HTTP 500. */
export class RlsUnavailableError extends Error {
  override readonly name = 'RlsUnavailableError';
}

/**
 * A request larger than the service decides in one store call (too many distinct counters): gRPC
 * RESOURCE_EXHAUSTED, HTTP 400. A request error, never a store failure.
 */
export class RlsTooLargeError extends RlsRequestError {
  override readonly name = 'RlsTooLargeError';
}
