/**
 * Starts the whole service from settings: the store (Redis standalone or Cluster, or memory), the
 * config and its watcher, the gRPC and HTTP servers, the health state; `close()` drains and stops.
 */
import type { Server as HttpServer } from 'node:http';
import { MemoryStore, type Store } from '@sluice/core';
import { createRedisStore } from '@sluice/core/node';
import { type ConfigWatcher, loadConfigDir, watchConfig } from './config/load.js';
import type { ConfigError } from './config/types.js';
import { bindGrpc, createGrpcServer, drainGrpc, HealthState } from './grpc.js';
import { createHttpServer, drainHttp, listenHttp, type MetricsText } from './http.js';
import { addQuotaService } from './quota/quota-setup.js';
import { RateLimitService } from './service.js';
import type { ServerSettings } from './settings.js';

/** Where the service writes its log lines (never identities, descriptor values or keys). */
export type Log = (level: 'info' | 'error', message: string) => void;

/** A running service. */
export interface RunningServer {
  readonly grpcPort: number;
  readonly httpPort: number;
  readonly service: RateLimitService;
  /** Health says NOT_SERVING, no new calls are taken, calls in flight are answered; then all stops. */
  close(): Promise<void>;
}

/** Options of `startServer`. */
export interface StartServerOptions {
  readonly log?: Log;
  /** A store to use instead of the one the settings describe (closed by the caller). */
  readonly store?: Store;
  /** What `GET /metrics` answers (default: this process's counters; a worker: all workers'). */
  readonly metrics?: MetricsText;
}

function buildStore(settings: ServerSettings): { store: Store; close: () => Promise<void> } {
  if (settings.redisUrl === undefined) return { store: new MemoryStore(), close: async () => {} };
  const urls = settings.redisUrl.split(',');
  // core's ioredis defaults (one retry, a 5 s command timeout); each call's deadline is SLUICE_TIMEOUT_MS.
  const store =
    settings.redisType === 'cluster'
      ? createRedisStore(
          { clusterNodes: urls.map((url) => new URL(url).host) },
          clusterAuth(urls[0] as string),
        )
      : createRedisStore(urls[0] as string);
  return { store, close: () => store.close() };
}

/** Cluster nodes share the credentials of the first seed URL (`redis://user:password@host:port`). */
function clusterAuth(url: string): {
  clusterOptions?: { redisOptions: { username?: string; password?: string } };
} {
  const { username, password } = new URL(url);
  if (password === '') return {};
  const auth = {
    password: decodeURIComponent(password),
    ...(username === '' ? {} : { username: decodeURIComponent(username) }),
  };
  return { clusterOptions: { redisOptions: auth } };
}

function describeStore(settings: ServerSettings): string {
  if (settings.redisUrl === undefined) return 'the memory store (REDIS_URL is unset: one process only)';
  const hosts = settings.redisUrl.split(',').map((url) => new URL(url).host);
  return `Redis ${settings.redisType} at ${hosts.join(',')}`;
}

const PROBE_INTERVAL_MS = 1000;

/**
 * Starts the service. Throws `ConfigError` when the config cannot be loaded (fatal at startup).
 */
export async function startServer(
  settings: ServerSettings,
  options: StartServerOptions = {},
): Promise<RunningServer> {
  const log: Log =
    options.log ?? ((level, message) => (level === 'error' ? console.error(message) : console.log(message)));
  const config = loadConfigDir(settings.configDir);
  const own = options.store === undefined ? buildStore(settings) : undefined;
  const store = options.store ?? (own as { store: Store }).store;
  const service = new RateLimitService({ settings, store, config });
  service.stats.addService('config_load_success');
  let draining = false;
  const serving = (): boolean => !draining && service.healthy;
  const health = new HealthState(serving);
  const watcher: ConfigWatcher = watchConfig(settings, {
    onLoad: (next) => {
      service.setConfig(next);
      service.stats.addService('config_load_success');
      log('info', `sluice-server: config reloaded (${next.files.length} files, ${next.rules.length} rules)`);
    },
    onError: (error: ConfigError) => {
      service.stats.addService('config_load_error');
      log(
        'error',
        `sluice-server: config reload refused, the previous config stays in force: ${error.message}`,
      );
    },
  });
  const probe = setInterval(() => {
    if (!service.healthy && !draining) void service.probeStore().then(() => health.refresh());
    else health.refresh();
  }, PROBE_INTERVAL_MS);
  probe.unref();
  const grpc = createGrpcServer(service, health);
  const quota = addQuotaService(grpc, service, settings, store);
  const http: HttpServer = createHttpServer(service, serving, options.metrics);
  const grpcPort = await bindGrpc(grpc, settings.host, settings.grpcPort);
  const httpPort = await listenHttp(http, settings.host, settings.httpPort);
  log(
    'info',
    `sluice-server: ${config.rules.length} rules from ${config.files.length} files in ${settings.configDir}`,
  );
  log('info', `sluice-server: deciding on ${describeStore(settings)}`);
  log('info', `sluice-server: listening on grpc ${grpcPort} and http ${httpPort}`);
  return {
    grpcPort,
    httpPort,
    service,
    async close(): Promise<void> {
      draining = true;
      health.refresh();
      watcher.close();
      clearInterval(probe);
      quota.streams.endAll();
      await Promise.all([drainGrpc(grpc, settings.drainMs), drainHttp(http, settings.drainMs)]);
      health.endAll();
      await own?.close();
    },
  };
}
