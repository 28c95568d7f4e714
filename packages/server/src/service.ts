/**
 * The rate limit service: ShouldRateLimit on the config in force, decided by a limiter (one atomic
 * store call for the charged descriptors of a request, the limiter's breaker, deadline and fail
 * modes). Transport-free: gRPC and HTTP both call `shouldRateLimit`.
 */
import { createLimiter, createMetrics, definePolicy, type Limiter, type Store } from '@sluice/core';
import type { RateLimitConfig } from './config/types.js';
import { type DecideContext, decideCounters } from './decide.js';
import { overZeroLimit, planRequest } from './plan.js';
import { buildResponse } from './respond.js';
import { type RlsRequest, RlsRequestError, type RlsResponse } from './rls-types.js';
import type { ServerSettings } from './settings.js';
import { ServiceStats } from './stats.js';

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
  private readonly context: DecideContext;
  private readonly prefix: string;

  constructor(options: RateLimitServiceOptions) {
    this.settings = options.settings;
    this.current = options.config;
    this.clock = options.clock ?? Date.now;
    this.prefix = `${options.settings.cacheKeyPrefix}sluice-rls`;
    this.stats.declareRules(options.config.rules);
    this.context = { limiter: serviceLimiter(options), onStoreResult: (ok) => this.noteStore(ok) };
    // The limiter's own series, by core's rule (as every adapter's /metrics shows them): decisions
    // by policy and outcome, store calls, failures by cause, latency, the breaker. Policies are the
    // config's rules (`rule-<n>`, numbered in config order), `override` and `health-probe`.
    const limiterMetrics = createMetrics({ meter: false, limiter: this.context.limiter });
    this.stats.addSource(() => limiterMetrics.families());
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

  /** The limiter deciding the requests: its counters (store calls, failures by cause, latency), its breaker. */
  get limiter(): Limiter {
    return this.context.limiter;
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

  /**
   * Asks the store once through the limiter (a look at a probe key, under the breaker and the
   * deadline); true when the store answered.
   */
  async probeStore(): Promise<boolean> {
    const probe = [{ key: `${this.prefix}:{~health}:probe`, policy: PROBE_POLICY, cost: 1 }];
    const decision = await this.context.limiter.checkEntries(probe, 'peek');
    this.storeHealthy = decision.source === 'store';
    return this.storeHealthy;
  }
}

/** The policy of the health probe's look, and the limiter's own set (never checked). */
const PROBE_POLICY = definePolicy({
  name: 'health-probe',
  algorithm: 'fixed-window',
  limit: 1,
  window: 1000,
  failMode: 'open',
});

/**
 * The limiter of a service: the service's store under its deadline (`SLUICE_TIMEOUT_MS`) and core's
 * breaker. The rules are the config's policies, handed to each call (`checkEntries`), so the
 * limiter's own set is the probe's policy, never checked by name; no deny cache (every hit is counted, as the
 * reference counts them).
 */
function serviceLimiter(options: RateLimitServiceOptions): Limiter {
  return createLimiter({
    store: options.store,
    policies: [PROBE_POLICY],
    timeoutMs: options.settings.timeoutMs,
    denyCache: false,
    ...(options.clock === undefined ? {} : { clock: options.clock }),
  });
}
