/**
 * The quota service of a running server: its table (Redis when the store is a Redis store, shared
 * by every server on it; else this process), its metrics on the service's `/metrics`, and the
 * gRPC service to add.
 */
import type { Server as GrpcServer } from '@grpc/grpc-js';
import type { ScriptTransport, Store } from '@sluice/core';
import { MemoryQuotaTable, type QuotaTable, RedisQuotaTable } from '@sluice/core/adapter';
import { rateLimitQuotaServiceDefinition } from '../protos.js';
import type { RateLimitService } from '../service.js';
import type { ServerSettings } from '../settings.js';
import { QuotaStreams } from './quota-grpc.js';
import { QuotaService } from './quota-service.js';

/** The quota table for `store`: the script on its Redis, or one in this process. */
export function quotaTableOf(store: Store): QuotaTable {
  const transport = (store as { transport?: ScriptTransport }).transport;
  return store.kind === 'redis' && transport !== undefined
    ? new RedisQuotaTable(transport)
    : new MemoryQuotaTable();
}

/**
 * Adds `StreamRateLimitQuotas` to `grpc` for `service`'s config and store; returns the streams
 * (ended at shutdown) and the quota service.
 */
export function addQuotaService(
  grpc: GrpcServer,
  service: RateLimitService,
  settings: ServerSettings,
  store: Store,
): { readonly quota: QuotaService; readonly streams: QuotaStreams } {
  const quota = new QuotaService({
    config: () => service.config,
    table: quotaTableOf(store),
    ttlMs: settings.quotaTtlMs,
    prefix: `${settings.cacheKeyPrefix}sluice-rlqs-quota`,
    timeoutMs: settings.timeoutMs,
    onStoreResult: (ok) => {
      if (!ok) service.stats.addService('redis_error');
    },
  });
  service.stats.addSource(() => quota.stats.families());
  const streams = new QuotaStreams(quota);
  grpc.addService(rateLimitQuotaServiceDefinition(), { StreamRateLimitQuotas: streams.handler() });
  return { quota, streams };
}
