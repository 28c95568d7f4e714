/**
 * Envoy's rate limit service, its rate limit quota service and the gRPC health service, loaded from the trimmed protos shipped
 * in `proto/` (same packages, message names and field numbers as upstream; a test checks them).
 */
import { fileURLToPath } from 'node:url';
import { type GrpcObject, loadPackageDefinition, type ServiceDefinition } from '@grpc/grpc-js';
import { loadSync, type Options, type PackageDefinition } from '@grpc/proto-loader';

/** The folder of the shipped `.proto` files. */
export const PROTO_DIR = fileURLToPath(new URL('../proto', import.meta.url));

/** The proto-loader options the service decodes with: field names as in the protos, enums as names. */
export const PROTO_OPTIONS: Options = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
  includeDirs: [PROTO_DIR],
};

/** The proto files, relative to `PROTO_DIR`. */
export const PROTO_FILES = [
  'envoy/service/ratelimit/v3/rls.proto',
  'envoy/service/rate_limit_quota/v3/rlqs.proto',
  'grpc/health/v1/health.proto',
];

let loaded: PackageDefinition | undefined;

/** The package definition of every service (loaded once). */
export function packageDefinition(): PackageDefinition {
  loaded ??= loadSync(PROTO_FILES, PROTO_OPTIONS);
  return loaded;
}

function serviceAt(root: GrpcObject, path: string): ServiceDefinition {
  let node: unknown = root;
  for (const part of path.split('.')) node = (node as Record<string, unknown>)[part];
  return (node as { service: ServiceDefinition }).service;
}

/** `envoy.service.ratelimit.v3.RateLimitService`. */
export function rateLimitServiceDefinition(): ServiceDefinition {
  return serviceAt(loadPackageDefinition(packageDefinition()), 'envoy.service.ratelimit.v3.RateLimitService');
}

/** `envoy.service.rate_limit_quota.v3.RateLimitQuotaService` (regional quotas). */
export function rateLimitQuotaServiceDefinition(): ServiceDefinition {
  return serviceAt(
    loadPackageDefinition(packageDefinition()),
    'envoy.service.rate_limit_quota.v3.RateLimitQuotaService',
  );
}

/** `grpc.health.v1.Health`. */
export function healthServiceDefinition(): ServiceDefinition {
  return serviceAt(loadPackageDefinition(packageDefinition()), 'grpc.health.v1.Health');
}
