/**
 * The options of one route's own rate limit (the Nest `@RateLimit()` decorator's surface,
 * `nestjs-decorator`): checked once, when the class is defined, into a `RouteLimit`.
 */

import { definePolicy } from '../policy/define-policy.js';
import type { PolicyInput } from '../types.js';
import { OPTION_DEFAULTS } from './defaults.js';
import { type DenyList, toDenyList } from './deny-list.js';
import type { CostValue } from './http-options.js';
import { checkOptionNames } from './option-names.js';
import { RateLimitOptionsError } from './options-error.js';
import { optionNames } from './schema.js';

/** Names of policies chosen per request (sync or async), e.g. by the tenant's plan. */
export type PolicyNamesOf<Req> = (req: Req) => readonly string[] | Promise<readonly string[]>;

/** The settle options a route sets over the module's. */
export const SETTLE_OPTION_NAMES = [
  'settle',
  'skipFailedRequests',
  'skipSuccessfulRequests',
  'requestWasSuccessful',
] as const;

/** What every route limit holds beside its policies. */
interface RouteLimitBase<Req> {
  /** The route's cost, as given (checked by core's resolver). */
  readonly cost: CostValue | ((req: Req) => CostValue | Promise<CostValue>) | undefined;
  readonly shadow: boolean | undefined;
  /** The route's deny list (instead of the module's), checked. */
  readonly denyList?: DenyList;
  /** The settle options the route sets, as given (checked by core's resolver). */
  readonly settling?: Readonly<Partial<Record<(typeof SETTLE_OPTION_NAMES)[number], unknown>>>;
}

/** A route's rate limit: module policies by name, or a policy of the route's own. */
export type RouteLimit<Req> =
  | (RouteLimitBase<Req> & {
      readonly kind: 'named';
      /** The names, or a function of the request choosing them. */
      readonly policies: readonly string[] | PolicyNamesOf<Req>;
    })
  | (RouteLimitBase<Req> & {
      readonly kind: 'own';
      /** The route's own policy; with `limitOf`, its `limit` is a stand-in (1) for validation. */
      readonly policy: PolicyInput;
      /** The limit chosen per request, or undefined when `policy.limit` is the limit. */
      readonly limitOf?: ((req: Req) => number | Promise<number>) | undefined;
    });

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

/**
 * Policy names as a route gives them: non-empty strings, frozen.
 *
 * @throws RateLimitOptionsError naming `policies` and the bad name
 */
export function policyNameList(names: readonly unknown[], source: string): readonly string[] {
  for (const name of names) {
    if (typeof name !== 'string' || name.length === 0) {
      throw new RateLimitOptionsError('policies', name, 'must be non-empty strings (policy names)', source);
    }
  }
  return Object.freeze([...(names as string[])]);
}

/** The settle options set in `options` (checked later, by core's resolver). */
function settlingOf(options: Record<string, unknown>): RouteLimitBase<unknown>['settling'] {
  const settling: Record<string, unknown> = {};
  for (const name of SETTLE_OPTION_NAMES) if (options[name] !== undefined) settling[name] = options[name];
  return settling;
}

/** `<Class>.<method>` for a method decorator's target and member, `<Class>` for a class decorator's. */
function defaultName(target: object, member: string | symbol | undefined): string {
  const owner = member === undefined ? (target as { name?: string }).name : target.constructor.name;
  return member === undefined ? String(owner) : `${owner}.${String(member)}`;
}

/**
 * A route's rate limit from the decorator's arguments: policy names (`'a', 'b'`), or one options
 * object with `policies` (names, or a function of the request) or a policy of the route's own
 * (`limit` + `window` or `rate`...; named `<Class>.<method>` of `target` and `member`, or `<Class>`
 * on a class, unless `name` says otherwise).
 *
 * @throws RateLimitOptionsError naming the option and the value; PolicyError for a bad own policy
 */
export function routeLimit<Req>(
  args: readonly unknown[],
  target: object,
  member: string | symbol | undefined,
  source = '@RateLimit()',
): RouteLimit<Req> {
  const [first] = args;
  if (args.length === 0) {
    throw new RateLimitOptionsError(
      'policies',
      undefined,
      'are required: give policy names or an options object',
      source,
    );
  }
  if (typeof first === 'string') {
    return { kind: 'named', policies: policyNameList(args, source), cost: undefined, shadow: undefined };
  }
  if (args.length > 1 || typeof first !== 'object' || first === null || Array.isArray(first)) {
    throw new RateLimitOptionsError('options', first, 'must be policy names or one options object', source);
  }
  const options = first as Record<string, unknown> & Partial<PolicyInput>;
  checkOptionNames(options, optionNames('nestjs-decorator'), source, source);
  if (options.shadow !== undefined && typeof options.shadow !== 'boolean') {
    throw new RateLimitOptionsError('shadow', options.shadow, 'must be true or false', source);
  }
  // A bad deny list throws here, when the class is defined; the list itself is kept (it may be replaced later).
  const denyList = options.denyList === undefined ? undefined : toDenyList(options.denyList, source);
  const base = {
    cost: options.cost as RouteLimitBase<Req>['cost'],
    shadow: options.shadow,
    ...(denyList !== undefined && { denyList }),
  };
  const own = OWN_POLICY_FIELDS.some((field) => options[field] !== undefined);
  if (own && options.policies !== undefined) {
    throw new RateLimitOptionsError(
      'policies',
      options.policies,
      "cannot be combined with a policy of the route's own (limit, window...): give one of them",
      source,
    );
  }
  if (!own) {
    if (typeof options.policies === 'function') {
      return {
        kind: 'named',
        policies: options.policies as PolicyNamesOf<Req>,
        cost: base.cost,
        shadow: base.shadow,
      };
    }
    if (!Array.isArray(options.policies)) {
      throw new RateLimitOptionsError(
        'policies',
        options.policies,
        'must be an array of policy names or a function of the request, or give "limit" and "window"',
        source,
      );
    }
    return {
      kind: 'named',
      policies: policyNameList(options.policies, source),
      ...base,
      settling: settlingOf(options),
    };
  }
  const limitOf = typeof options.limit === 'function' ? (options.limit as (req: Req) => number) : undefined;
  const policy: PolicyInput = {
    name: options.name ?? defaultName(target, member),
    scope: options.scope ?? OPTION_DEFAULTS.routeScope,
    ...(options.algorithm !== undefined && { algorithm: options.algorithm }),
    ...(options.limit !== undefined && { limit: limitOf === undefined ? options.limit : 1 }),
    ...(options.window !== undefined && { window: options.window }),
    ...(options.rate !== undefined && { rate: options.rate }),
    ...(options.burst !== undefined && { burst: options.burst }),
    ...(options.failMode !== undefined && { failMode: options.failMode }),
  };
  definePolicy(policy); // a bad policy throws here, when the class is defined
  return { kind: 'own', policy: Object.freeze(policy), limitOf, ...base, settling: settlingOf(options) };
}
