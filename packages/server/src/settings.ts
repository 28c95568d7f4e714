/**
 * The service's settings, read from the environment with envoyproxy/ratelimit's variable names and
 * defaults for what both have. A bad value throws naming the variable and the value, at startup.
 */
import { availableParallelism } from 'node:os';
import { join } from 'node:path';

/** How the service answers over gRPC headers: none, envoyproxy/ratelimit's three, or IETF draft-10. */
export type ResponseHeaders = 'off' | 'reference' | 'draft-10';

/** Everything the service reads from its environment. */
export interface ServerSettings {
  /** gRPC port (`GRPC_PORT`, default 8081; 0 picks a free one). */
  readonly grpcPort: number;
  /** HTTP port for `/json`, `/healthcheck`, `/metrics` (`PORT`, default 8080; 0 picks a free one). */
  readonly httpPort: number;
  /** Address both listen on (`HOST`, default `0.0.0.0`). */
  readonly host: string;
  /** The folder of `*.yaml` config files: `$RUNTIME_ROOT/$RUNTIME_SUBDIRECTORY/$RUNTIME_APPDIRECTORY`. */
  readonly configDir: string;
  /** `RUNTIME_ROOT`: watched (recursively) when `watchRoot`. */
  readonly runtimeRoot: string;
  /** `RUNTIME_WATCH_ROOT` (default true); `false` watches the config folder itself. */
  readonly watchRoot: boolean;
  /** `REDIS_URL` as a `redis://` URL, or unset: the memory store. */
  readonly redisUrl: string | undefined;
  /** `REDIS_TYPE`: `single` (default) or `cluster` (`REDIS_URL` then lists seed nodes, comma separated). */
  readonly redisType: 'single' | 'cluster';
  /** `SHADOW_MODE`: answer OK whatever the verdict, counting `global_shadow_mode`. */
  readonly shadowMode: boolean;
  /** `LIMIT_RESPONSE_HEADERS_ENABLED` (reference headers) or `SLUICE_RESPONSE_HEADERS=draft-10`. */
  readonly responseHeaders: ResponseHeaders;
  /** Header names of the reference format (`LIMIT_LIMIT_HEADER`, `LIMIT_REMAINING_HEADER`, `LIMIT_RESET_HEADER`). */
  readonly headerNames: { readonly limit: string; readonly remaining: string; readonly reset: string };
  /** `CACHE_KEY_PREFIX`: prepended to every Redis key (default empty). */
  readonly cacheKeyPrefix: string;
  /** `NEAR_LIMIT_RATIO` (default 0.8): a hit above this share of the limit counts `near_limit`. */
  readonly nearLimitRatio: number;
  /** `SLUICE_TIMEOUT_MS` (default 100): deadline of one store call. */
  readonly timeoutMs: number;
  /** `SLUICE_DRAIN_MS` (default 10000): how long SIGTERM waits for calls in flight. */
  readonly drainMs: number;
  /** `SLUICE_QUOTA_TTL_MS` (default 10000): `assignment_time_to_live` of regional quota assignments. */
  readonly quotaTtlMs: number;
}

type Env = Readonly<Record<string, string | undefined>>;

function fail(name: string, value: string, rule: string): never {
  throw new TypeError(`sluice-server: ${name} ${rule}, got ${JSON.stringify(value)}`);
}

function readBool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const lower = raw.toLowerCase();
  if (lower === 'true' || lower === '1') return true;
  if (lower === 'false' || lower === '0') return false;
  return fail(name, raw, 'must be true or false');
}

function readInt(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    return fail(name, raw, `must be an integer from ${min} to ${max}`);
  }
  return value;
}

/**
 * `REDIS_URL` as the reference writes it (`host:port`, several comma separated for a cluster) or as
 * `redis://` URLs: a list of `redis://` URLs.
 */
function readRedisUrls(raw: string): string[] {
  return raw.split(',').map((part) => {
    const url = part.trim();
    if (/^rediss?:\/\//.test(url)) return url;
    if (/^[^/\s]+:\d+$/.test(url)) return `redis://${url}`;
    return fail('REDIS_URL', raw, 'must be host:port or a redis:// URL (comma separated for a cluster)');
  });
}

/** The settings of `env` (default: `process.env`). */
export function readSettings(env: Env = process.env): ServerSettings {
  const runtimeRoot = env.RUNTIME_ROOT || '/srv/runtime_data/current';
  const redisTypeRaw = (env.REDIS_TYPE || 'single').toLowerCase();
  if (redisTypeRaw !== 'single' && redisTypeRaw !== 'cluster') {
    fail('REDIS_TYPE', env.REDIS_TYPE ?? '', 'must be single or cluster');
  }
  const headersRaw = env.SLUICE_RESPONSE_HEADERS;
  if (
    headersRaw !== undefined &&
    headersRaw !== '' &&
    headersRaw !== 'draft-10' &&
    headersRaw !== 'reference'
  ) {
    fail('SLUICE_RESPONSE_HEADERS', headersRaw, 'must be draft-10 or reference');
  }
  const referenceHeaders = readBool(env, 'LIMIT_RESPONSE_HEADERS_ENABLED', false);
  const nearRaw = env.NEAR_LIMIT_RATIO;
  const nearLimitRatio = nearRaw === undefined || nearRaw === '' ? 0.8 : Number(nearRaw);
  if (!(nearLimitRatio > 0 && nearLimitRatio <= 1))
    fail('NEAR_LIMIT_RATIO', nearRaw ?? '', 'must be in (0, 1]');
  return {
    grpcPort: readInt(env, 'GRPC_PORT', 8081, 0, 65_535),
    httpPort: readInt(env, 'PORT', 8080, 0, 65_535),
    host: env.HOST || '0.0.0.0',
    runtimeRoot,
    configDir: join(runtimeRoot, env.RUNTIME_SUBDIRECTORY ?? '', env.RUNTIME_APPDIRECTORY || 'config'),
    watchRoot: readBool(env, 'RUNTIME_WATCH_ROOT', true),
    redisUrl: env.REDIS_URL ? readRedisUrls(env.REDIS_URL).join(',') : undefined,
    redisType: redisTypeRaw,
    shadowMode: readBool(env, 'SHADOW_MODE', false),
    responseHeaders:
      headersRaw === 'draft-10'
        ? 'draft-10'
        : referenceHeaders || headersRaw === 'reference'
          ? 'reference'
          : 'off',
    headerNames: {
      limit: env.LIMIT_LIMIT_HEADER || 'RateLimit-Limit',
      remaining: env.LIMIT_REMAINING_HEADER || 'RateLimit-Remaining',
      reset: env.LIMIT_RESET_HEADER || 'RateLimit-Reset',
    },
    cacheKeyPrefix: env.CACHE_KEY_PREFIX ?? '',
    nearLimitRatio,
    timeoutMs: readInt(env, 'SLUICE_TIMEOUT_MS', 100, 1, 60_000),
    drainMs: readInt(env, 'SLUICE_DRAIN_MS', 10_000, 0, 600_000),
    quotaTtlMs: readInt(env, 'SLUICE_QUOTA_TTL_MS', 10_000, 100, 3_600_000),
  };
}

/**
 * `SLUICE_WORKERS`: how many worker processes share the ports (default: the machine's available
 * parallelism on Redis, 1 on the memory store; `1` runs one process, no workers). Several workers
 * need `REDIS_URL`: on the memory store each would decide alone, so a limit would count per worker.
 */
export function readWorkerCount(
  settings: Pick<ServerSettings, 'redisUrl'>,
  env: Env = process.env,
  parallelism: number = availableParallelism(),
): number {
  const fallback = settings.redisUrl === undefined ? 1 : parallelism;
  const workers = readInt(env, 'SLUICE_WORKERS', fallback, 1, 256);
  if (workers > 1 && settings.redisUrl === undefined) {
    fail(
      'SLUICE_WORKERS',
      env.SLUICE_WORKERS ?? '',
      'above 1 needs REDIS_URL (each worker would keep its own memory store)',
    );
  }
  return workers;
}
