/** `@RateLimit()` and `@SkipRateLimit()`: per-controller and per-handler rate-limit metadata. */
import { SetMetadata } from '@nestjs/common';
import { definePolicy, type PolicyInput } from '@sluice/core';
import {
  checkOptionNames,
  OPTION_DEFAULTS,
  optionNames,
  RateLimitOptionsError,
  toDenyList,
} from '@sluice/core/adapter';
import type { PolicyNamesOf, RateLimitRequest, RateLimitRouteOptions } from './module-options.js';
import { RATE_LIMIT_METADATA, SKIP_RATE_LIMIT_METADATA } from './tokens.js';

export type { RateLimitRouteOptions } from './module-options.js';

/** What `@RateLimit()` stores: module policies by name, or a route's own policy. */
export type RateLimitMetadata =
  | {
      readonly kind: 'named';
      /** The names, or a function of the request choosing them. */
      readonly policies: readonly string[] | PolicyNamesOf<RateLimitRequest>;
      readonly cost: RateLimitRouteOptions['cost'];
      readonly shadow: boolean | undefined;
      /** The route's deny list (instead of the module's), as given. */
      readonly denyList?: RateLimitRouteOptions['denyList'];
      readonly settling?: RouteSettleOptions;
    }
  | {
      readonly kind: 'own';
      /** The route's own policy; with `limitOf`, its `limit` is a stand-in (1) for validation. */
      readonly policy: PolicyInput;
      /** The limit chosen per request, or undefined when `policy.limit` is the limit. */
      readonly limitOf?: ((req: RateLimitRequest) => number | Promise<number>) | undefined;
      readonly cost: RateLimitRouteOptions['cost'];
      readonly shadow: boolean | undefined;
      /** The route's deny list (instead of the module's), as given. */
      readonly denyList?: RateLimitRouteOptions['denyList'];
      readonly settling?: RouteSettleOptions;
    };

/** The settle options a route sets (`settle`, the skip options), over the module's. */
export type RouteSettleOptions = Pick<RateLimitRouteOptions, (typeof SETTLE_OPTION_NAMES)[number]>;

/** The settle options `@RateLimit()` takes over the module's. */
export const SETTLE_OPTION_NAMES = [
  'settle',
  'skipFailedRequests',
  'skipSuccessfulRequests',
  'requestWasSuccessful',
] as const;

/** The settle options set in `options` (checked later, by core's resolver). */
function settlingOf(options: RateLimitRouteOptions): RouteSettleOptions {
  const settling: Record<string, unknown> = {};
  for (const name of SETTLE_OPTION_NAMES) if (options[name] !== undefined) settling[name] = options[name];
  return settling as RouteSettleOptions;
}

/** What `@SkipRateLimit()` stores: `true` skips every policy, a list skips those named. */
export type SkipRateLimitMetadata = true | readonly string[];

const OWN_POLICY_FIELDS = [
  'limit',
  'window',
  'rate',
  'burst',
  'algorithm',
  'failMode',
  'scope',
  'name',
] as const;
const SOURCE = '@RateLimit()';
const ROUTE_FIELDS = optionNames('nestjs-decorator');

function policyNames(names: readonly unknown[], where: string): readonly string[] {
  for (const name of names) {
    if (typeof name !== 'string' || name.length === 0) {
      throw new RateLimitOptionsError('policies', name, 'must be non-empty strings (policy names)', where);
    }
  }
  return Object.freeze([...(names as string[])]);
}

function defaultName(target: object, propertyKey: string | symbol | undefined): string {
  const owner = propertyKey === undefined ? (target as { name?: string }).name : target.constructor.name;
  return propertyKey === undefined ? String(owner) : `${owner}.${String(propertyKey)}`;
}

function toMetadata(
  args: readonly unknown[],
  target: object,
  propertyKey: string | symbol | undefined,
): RateLimitMetadata {
  const [first] = args;
  if (args.length === 0) {
    throw new RateLimitOptionsError(
      'policies',
      undefined,
      'are required: give policy names or an options object',
      SOURCE,
    );
  }
  if (typeof first === 'string')
    return { kind: 'named', policies: policyNames(args, '@RateLimit()'), cost: undefined, shadow: undefined };
  if (args.length > 1 || typeof first !== 'object' || first === null || Array.isArray(first)) {
    throw new RateLimitOptionsError('options', first, 'must be policy names or one options object', SOURCE);
  }
  const options = first as RateLimitRouteOptions;
  checkOptionNames(options as Record<string, unknown>, ROUTE_FIELDS, '@RateLimit()', SOURCE);
  if (options.shadow !== undefined && typeof options.shadow !== 'boolean') {
    throw new RateLimitOptionsError('shadow', options.shadow, 'must be true or false', SOURCE);
  }
  // A bad deny list throws here, when the class is defined; the list itself is kept (it may be replaced later).
  const denyList = options.denyList === undefined ? undefined : toDenyList(options.denyList, SOURCE);
  const own = OWN_POLICY_FIELDS.some((field) => options[field] !== undefined);
  if (own && options.policies !== undefined) {
    throw new RateLimitOptionsError(
      'policies',
      options.policies,
      "cannot be combined with a policy of the route's own (limit, window...): give one of them",
      SOURCE,
    );
  }
  if (!own) {
    if (typeof options.policies === 'function') {
      return { kind: 'named', policies: options.policies, cost: options.cost, shadow: options.shadow };
    }
    if (!Array.isArray(options.policies)) {
      throw new RateLimitOptionsError(
        'policies',
        options.policies,
        'must be an array of policy names or a function of the request, or give "limit" and "window"',
        SOURCE,
      );
    }
    return {
      kind: 'named',
      policies: policyNames(options.policies, '@RateLimit()'),
      cost: options.cost,
      shadow: options.shadow,
      ...(denyList !== undefined && { denyList }),
      settling: settlingOf(options),
    };
  }
  const limitOf = typeof options.limit === 'function' ? options.limit : undefined;
  const policy: PolicyInput = {
    name: options.name ?? defaultName(target, propertyKey),
    scope: options.scope ?? OPTION_DEFAULTS.routeScope,
    ...(options.algorithm !== undefined && { algorithm: options.algorithm }),
    ...(options.limit !== undefined && { limit: limitOf === undefined ? (options.limit as number) : 1 }),
    ...(options.window !== undefined && { window: options.window }),
    ...(options.rate !== undefined && { rate: options.rate }),
    ...(options.burst !== undefined && { burst: options.burst }),
    ...(options.failMode !== undefined && { failMode: options.failMode }),
  };
  definePolicy(policy); // a bad policy throws here, when the class is defined
  return {
    kind: 'own',
    policy: Object.freeze(policy),
    limitOf,
    cost: options.cost,
    shadow: options.shadow,
    ...(denyList !== undefined && { denyList }),
    settling: settlingOf(options),
  };
}

function setMetadata(
  key: string,
  value: unknown,
  target: object,
  propertyKey: string | symbol | undefined,
  descriptor: PropertyDescriptor | undefined,
): void {
  if (descriptor === undefined) SetMetadata(key, value)(target as () => unknown);
  else SetMetadata(key, value)(target, propertyKey as string | symbol, descriptor);
}

/**
 * Rate-limits a controller or a handler. The handler's decorator wins over the controller's.
 *
 * - `@RateLimit('payments', 'transfers')`: these module policies, decided together.
 * - `@RateLimit({ policies: ['payments'], cost: 5 })`: with a cost for this route.
 * - `@RateLimit({ limit: 10, window: '1m' })`: a policy of this route's own (token bucket
 *   by default, as every policy), on the module's store, one budget per route.
 *
 * Bad arguments throw when the class is defined.
 */
export function RateLimit(...policies: string[]): ClassDecorator & MethodDecorator;
export function RateLimit(options: RateLimitRouteOptions): ClassDecorator & MethodDecorator;
export function RateLimit(...args: unknown[]): ClassDecorator & MethodDecorator {
  return ((target: object, propertyKey?: string | symbol, descriptor?: PropertyDescriptor) => {
    setMetadata(RATE_LIMIT_METADATA, toMetadata(args, target, propertyKey), target, propertyKey, descriptor);
    return descriptor;
  }) as ClassDecorator & MethodDecorator;
}

/**
 * Skips rate limiting on a controller or a handler: every policy with no arguments, or
 * only the named ones (`@SkipRateLimit('burst')`). The handler's decorator wins over the
 * controller's.
 */
export function SkipRateLimit(...policies: string[]): ClassDecorator & MethodDecorator {
  const value: SkipRateLimitMetadata =
    policies.length === 0 ? true : policyNames(policies, '@SkipRateLimit()');
  return ((target: object, propertyKey?: string | symbol, descriptor?: PropertyDescriptor) => {
    setMetadata(SKIP_RATE_LIMIT_METADATA, value, target, propertyKey, descriptor);
    return descriptor;
  }) as ClassDecorator & MethodDecorator;
}
