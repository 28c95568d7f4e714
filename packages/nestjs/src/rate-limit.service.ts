/** `RateLimitService`: which policies apply to a handler, resolved once per handler. */
import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { PATH_METADATA } from '@nestjs/common/constants.js';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import {
  createLimiter,
  type DecisionEvent,
  type Limiter,
  type PolicyInput,
  type RateLimitOptions,
  type Store,
} from '@sluice/core';
import {
  checkOwnPolicyStore,
  checkSuccessDecided,
  compilePolicies,
  createRateLimitHandler,
  DecisionFanout,
  limiterOptionsOf,
  type PolicyNamesOf,
  preparePolicy,
  type RateLimitHandler,
  type RateLimitHandlerSettings,
  RateLimitOptionsError,
  routePolicyNames,
  routeRequestOptions,
} from '@sluice/core/adapter';
import type { RateLimitMetadata, SkipRateLimitMetadata } from './decorators.js';
import {
  RATE_LIMIT_MODULE_OPTIONS,
  type RateLimitModuleOptions,
  type RateLimitRequest,
} from './module-options.js';
import { RATE_LIMIT_METADATA, RATE_LIMIT_STORE, RATE_LIMITER, SKIP_RATE_LIMIT_METADATA } from './tokens.js';

/** The rate limit of one handler: core's request handler and its resolved options. */
export type RouteRateLimit = RateLimitHandler<RateLimitRequest>;

const ADAPTER = 'nestjs';

/**
 * Resolves, once per controller and handler, which policies apply (decorators, skip lists,
 * the module's `defaultPolicies`) into core's request handler (`limitRequest`). Every route of every controller is
 * resolved when the module starts, so an unknown policy name fails the application start.
 */
@Injectable()
export class RateLimitService implements OnModuleInit {
  private readonly routes = new WeakMap<object, WeakMap<object, RouteRateLimit | null>>();
  /** Every limiter of the module (its own and those of routes), for `onDecision`. */
  private readonly limiters = new DecisionFanout();
  private successDecided = false; // a route skips: the module's requestWasSuccessful serves it

  constructor(
    @Inject(RATE_LIMIT_MODULE_OPTIONS) private readonly options: RateLimitModuleOptions,
    @Inject(RATE_LIMITER) readonly limiter: Limiter,
    @Inject(RATE_LIMIT_STORE) private readonly store: Store | undefined,
    private readonly reflector: Reflector,
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
  ) {
    this.limiters.add(limiter);
  }

  /** Resolves every controller handler now, so configuration errors surface at start-up. */
  onModuleInit(): void {
    for (const wrapper of this.discovery.getControllers()) {
      const controller = wrapper.metatype as (abstract new (...args: never[]) => unknown) | null;
      if (typeof controller !== 'function') continue;
      const prototype = controller.prototype as Record<string, unknown>;
      for (const name of this.scanner.getAllMethodNames(prototype)) {
        const handler = prototype[name];
        if (typeof handler === 'function' && this.reflector.get(PATH_METADATA, handler) !== undefined) {
          this.forRoute(controller, handler);
        }
      }
    }
    checkSuccessDecided(this.options.requestWasSuccessful, this.successDecided);
  }

  /**
   * Subscribes to the decisions of every limiter of the module: the module's own
   * (`RATE_LIMITER`) and those of `@RateLimit({ limit, window })` routes. Use it for metrics.
   *
   * @returns a function that unsubscribes
   */
  onDecision(listener: (event: DecisionEvent) => void): () => void {
    return this.limiters.onDecision(listener);
  }

  /**
   * The rate limit of one handler, or `undefined` when no policy applies there.
   *
   * @param controller the controller (or resolver, gateway) class: `context.getClass()`
   * @param handler the handler: `context.getHandler()`
   */
  forRoute(controller: object, handler: object): RouteRateLimit | undefined {
    let byHandler = this.routes.get(controller);
    if (byHandler === undefined) {
      byHandler = new WeakMap();
      this.routes.set(controller, byHandler);
    }
    let route = byHandler.get(handler);
    if (route === undefined) {
      route = this.resolve(controller, handler);
      byHandler.set(handler, route);
    }
    return route ?? undefined;
  }

  private resolve(controller: object, handler: object): RouteRateLimit | null {
    const targets = [handler, controller] as (() => unknown)[];
    const skip = this.reflector.getAllAndOverride<SkipRateLimitMetadata | undefined>(
      SKIP_RATE_LIMIT_METADATA,
      targets,
    );
    if (skip === true) return null;
    const meta = this.reflector.getAllAndOverride<RateLimitMetadata | undefined>(
      RATE_LIMIT_METADATA,
      targets,
    );
    const all = this.limiter.policies.map((policy) => policy.name);
    const policies = routePolicyNames(meta, this.options.defaultPolicies, all, skip);
    if (policies === undefined) return null;
    const { options, skips } = routeRequestOptions<RateLimitRequest>(this.options, meta);
    if (skips) this.successDecided = true;
    const [own, settings] = this.policiesOf(meta, policies);
    try {
      return createRateLimitHandler<RateLimitRequest>({ ...options, ...own }, ADAPTER, settings);
    } catch (error) {
      // Name the route: `@RateLimit() on PaymentsController.create: "policies" must name ...`.
      if (!(error instanceof RateLimitOptionsError) || error.option !== 'policies') throw error;
      const owner = (controller as { name?: string }).name ?? 'a controller';
      throw error.from(`@RateLimit() on ${owner}.${(handler as { name?: string }).name ?? 'a handler'}`);
    }
  }

  /**
   * Which policies a route's handler applies, as core's options say it: module policies by name
   * (the module's `limiter`), a route's own policy (its own limiter), or a `limit` chosen per
   * request (the module's or the route's own), each limit compiled once by core into a limiter on
   * the module's store and options.
   */
  private policiesOf(
    meta: RateLimitMetadata | undefined,
    policies: readonly string[] | PolicyNamesOf<RateLimitRequest>,
  ): [RateLimitOptions<RateLimitRequest>, RateLimitHandlerSettings] {
    const createLimiter = (inputs: readonly PolicyInput[]) =>
      this.limiters.add(this.createOwnLimiter(inputs));
    if (meta?.kind === 'own') {
      checkOwnPolicyStore(this.store, meta.policy.name);
      const input = this.ownPolicyInput(meta);
      if (meta.limitOf === undefined) return [{ policies: [input], store: this.store }, { createLimiter }];
      const shared = { limit: meta.limitOf, store: this.store, failMode: input.failMode };
      return [shared, { createLimiter, limitPolicy: (limit) => ({ ...input, limit }) }];
    }
    // Module-wide shadow is built into the module's policies; a given `limiter` has its policies
    // already, so the module's `shadow` applies per decision (and a route's `shadow` always).
    const routeShadow = meta?.kind === 'named' ? meta.shadow : undefined;
    const shadow = routeShadow ?? (this.options.limiter !== undefined ? this.options.shadow : undefined);
    const { limit } = this.options;
    if (typeof limit !== 'function') return [{ limiter: this.limiter, policies, shadow }, {}];
    const shared = { limit, store: this.store, failMode: this.options.failMode, shadow };
    const limitPolicy = (n: number) => compilePolicies({ ...this.options, limit: n })[0] as PolicyInput;
    return [shared, { createLimiter, limitPolicy }];
  }

  /** The policy of a route's own `@RateLimit()`, with the module's fail mode and shadow. */
  private ownPolicyInput(meta: Extract<RateLimitMetadata, { kind: 'own' }>): PolicyInput {
    return preparePolicy(meta.policy, {
      failMode: this.options.failMode,
      shadow: meta.shadow ?? this.options.shadow,
    });
  }

  private createOwnLimiter(policies: readonly PolicyInput[]): Limiter {
    return createLimiter({
      ...limiterOptionsOf(this.options),
      prefix: this.options.prefix ?? this.limiter.prefix,
      policies,
      store: this.store as Store,
    });
  }
}
