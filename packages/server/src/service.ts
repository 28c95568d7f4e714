/**
 * The rate limit service: ShouldRateLimit on the config in force, one atomic store call for the
 * charged descriptors of a request. Transport-free: gRPC and HTTP both call `shouldRateLimit`.
 */
import { MemoryStore, type Store } from '@sluice/core';
import type { RateLimitConfig } from './config/types.js';
import { overZeroLimit, planRequest } from './plan.js';
import { buildResponse } from './respond.js';
import { type RlsRequest, RlsRequestError, type RlsResponse } from './rls-types.js';
import type { ServerSettings } from './settings.js';
import { ServiceStats } from './stats.js';
import { decideCounters, type StoreCallContext, withDeadline } from './store-call.js';

/** What a service is built from. */
export interface RateLimitServiceOptions {
  readonly settings: ServerSettings;
  readonly store: Store;
  readonly config: RateLimitConfig;
  /** Milliseconds since the epoch (tests). */
  readonly clock?: () => number;
}

/** Decides Envoy rate limit requests against a config and a store. */
export class RateLimitService {
  readonly stats = new ServiceStats();
  private current: RateLimitConfig;
  private storeHealthy = true;
  private readonly settings: ServerSettings;
  private readonly clock: () => number;
  private readonly context: StoreCallContext;
  private readonly prefix: string;

  constructor(options: RateLimitServiceOptions) {
    this.settings = options.settings;
    this.current = options.config;
    this.clock = options.clock ?? Date.now;
    this.prefix = `${options.settings.cacheKeyPrefix}sluice-rls`;
    this.stats.declareRules(options.config.rules);
    this.context = {
      store: options.store,
      local: new MemoryStore(),
      timeoutMs: options.settings.timeoutMs,
      onStoreResult: (ok) => this.noteStore(ok),
    };
  }

  /** The config in force. */
  get config(): RateLimitConfig {
    return this.current;
  }

  /** Puts a new config in force; calls already running finish on the one they started with. */
  setConfig(config: RateLimitConfig): void {
    this.current = config;
    this.stats.declareRules(config.rules);
  }

  /** False once a store call failed, until one succeeds again. */
  get healthy(): boolean {
    return this.storeHealthy;
  }

  private noteStore(ok: boolean): void {
    if (!ok) this.stats.addService('redis_error');
    this.storeHealthy = ok;
  }

  /**
   * Decides one request. Rejects with `RlsRequestError` (bad request; `RlsTooLargeError` for one of
   * too many counters) or `RlsUnavailableError` (the store failed and a rule fails `closed`).
   */
  async shouldRateLimit(request: RlsRequest): Promise<RlsResponse> {
    try {
      const planned = planRequest(this.current, request, this.prefix);
      const blocked = planned.some((d) => overZeroLimit(d) && d.rule?.shadow === false);
      const counters = await decideCounters(this.context, planned, blocked);
      return buildResponse(this.settings, this.stats, planned, counters, this.clock());
    } catch (error) {
      if (error instanceof RlsRequestError) this.stats.addService('service_error');
      throw error;
    }
  }

  /** Asks the store once (a look at a probe key); true when it answered within the deadline. */
  async probeStore(): Promise<boolean> {
    try {
      await withDeadline(
        this.context.store.reset([`${this.prefix}:{~health}:probe`]),
        this.settings.timeoutMs,
      );
      this.storeHealthy = true;
    } catch {
      this.storeHealthy = false;
    }
    return this.storeHealthy;
  }
}
