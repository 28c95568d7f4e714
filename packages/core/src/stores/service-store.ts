/**
 * A `Store` that asks a running sluice-server (`@sluice/server`, or envoyproxy/ratelimit) instead
 * of Redis, over its `POST /json` endpoint, so a Node service and an Envoy gateway enforce the
 * service's one policy set. Web-standard: `fetch` only, so it runs on every runtime.
 */
import type { FetchLike } from '../redis/rest-client.js';
import type { Store, StoreEntry, StoreMode, StoreVerdict } from '../types.js';

/** One descriptor entry as the service's config matches it. */
export interface ServiceDescriptorEntry {
  readonly key: string;
  readonly value: string;
}

/** Options of `createServiceStore`. */
export interface ServiceStoreOptions {
  /** The service's HTTP address, e.g. `http://ratelimit:8080` (`/json` is appended). */
  readonly url: string;
  /** The config domain the descriptors are matched in. */
  readonly domain: string;
  /**
   * The descriptor entries of one store entry. Default: `[{ key: <policy name>, value: <storage
   * key> }]`, which a service rule `- key: <policy name>` with `rate_limit` limits per identity.
   */
  readonly descriptor?: (entry: StoreEntry) => readonly ServiceDescriptorEntry[];
  /** The fetch to use (default: the global `fetch`). */
  readonly fetch?: FetchLike;
  /** Extra request headers (authentication in front of the service). */
  readonly headers?: Readonly<Record<string, string>>;
}

/** A descriptor status of the service's proto3 JSON answer. */
interface JsonStatus {
  readonly code?: string;
  readonly currentLimit?: unknown;
  readonly limitRemaining?: number;
  readonly durationUntilReset?: string;
}

const defaultDescriptor = (entry: StoreEntry): ServiceDescriptorEntry[] => [
  { key: entry.policy.name, value: entry.key },
];

/** `"1.500s"` (a protobuf Duration in JSON) in whole milliseconds, rounded up. */
export function protoDurationMs(text: string | undefined): number {
  if (text === undefined) return 0;
  const seconds = Number(text.endsWith('s') ? text.slice(0, -1) : text);
  return Number.isFinite(seconds) && seconds > 0 ? Math.ceil(seconds * 1000) : 0;
}

function verdictOf(entry: StoreEntry, status: JsonStatus | undefined, mode: StoreMode): StoreVerdict {
  if (status === undefined)
    throw new Error('the rate limit service answered fewer statuses than descriptors');
  // No rule of the service applies: nothing limits this entry.
  if (status.currentLimit === undefined) {
    return {
      allowed: true,
      remaining: entry.policy.limit,
      resetMs: 0,
      retryAfterMs: 0,
      ...charged(entry, true),
    };
  }
  const remaining = status.limitRemaining ?? 0;
  const waitMs = protoDurationMs(status.durationUntilReset);
  const allowed = mode === 'peek' ? remaining >= entry.cost : status.code === 'OK';
  return {
    allowed,
    remaining,
    resetMs: waitMs,
    retryAfterMs: allowed ? 0 : waitMs,
    ...charged(entry, allowed),
  };
}

function charged(entry: StoreEntry, allowed: boolean): { chargedUnits?: number } {
  return entry.leastCost === undefined ? {} : { chargedUnits: allowed ? entry.cost : 0 };
}

/** The store behind `createServiceStore`. */
export class ServiceStore implements Store {
  readonly kind = 'service';
  private readonly endpoint: string;
  private readonly fetchFn: FetchLike;
  private readonly descriptorOf: (entry: StoreEntry) => readonly ServiceDescriptorEntry[];
  private readonly headers: Record<string, string>;

  constructor(private readonly options: ServiceStoreOptions) {
    if (typeof options.url !== 'string' || !/^https?:\/\//.test(options.url)) {
      throw new TypeError(
        `createServiceStore: "url" must be an http:// or https:// URL, got ${JSON.stringify(options.url)}`,
      );
    }
    if (typeof options.domain !== 'string' || options.domain === '') {
      throw new TypeError(
        `createServiceStore: "domain" must be a non-empty string, got ${JSON.stringify(options.domain)}`,
      );
    }
    this.endpoint = `${options.url.replace(/\/+$/, '')}/json`;
    this.fetchFn = options.fetch ?? ((input, init) => fetch(input, init));
    this.descriptorOf = options.descriptor ?? defaultDescriptor;
    this.headers = { 'content-type': 'application/json', ...options.headers };
  }

  /**
   * Every entry is one descriptor of ONE request, which the service decides all or nothing; a
   * look (`peek`) sends a hits_addend of 0. Costs are whole units (a fraction is rounded up).
   */
  async decide(entries: readonly StoreEntry[], mode: StoreMode): Promise<StoreVerdict[]> {
    const body = JSON.stringify({
      domain: this.options.domain,
      descriptors: entries.map((entry) => ({
        entries: this.descriptorOf(entry),
        hitsAddend: mode === 'peek' ? 0 : Math.ceil(entry.cost),
      })),
    });
    const response = await this.fetchFn(this.endpoint, { method: 'POST', headers: this.headers, body });
    if (response.status !== 200 && response.status !== 429) {
      throw new Error(`the rate limit service answered HTTP ${response.status}`);
    }
    const answer = (await response.json()) as { statuses?: JsonStatus[] };
    return entries.map((entry, i) => verdictOf(entry, answer.statuses?.[i], mode));
  }

  /** The service has no reset: counters live in its Redis. Rejects, saying so. */
  reset(): Promise<void> {
    return Promise.reject(new Error('a ServiceStore cannot reset: counters live in the rate limit service'));
  }
}

/**
 * A `Store` that asks a running sluice-server over `POST /json` instead of Redis:
 * `createLimiter({ store: createServiceStore({ url: 'http://ratelimit:8080', domain: 'app' }), policies })`.
 * The service's config decides the limits; the limiter's policies name them (and give fail modes).
 */
export function createServiceStore(options: ServiceStoreOptions): ServiceStore {
  return new ServiceStore(options);
}
