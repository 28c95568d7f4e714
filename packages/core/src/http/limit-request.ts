/**
 * The request path every adapter shares: skip -> identity -> deny list -> cost -> `limiter.check` ->
 * `toHttpVerdict`, with double-count protection per request.
 */
import type { Limiter } from '../limiter/index.js';
import type { Decision, Descriptor, IdentityInput } from '../types.js';
import { addCheck, findCheck } from './check-records.js';
import { FORBIDDEN, FORBIDDEN_PROMISE } from './forbidden.js';
import { createLimitChosen } from './limit-chosen.js';
import type { ResolvedRateLimitOptions } from './options.js';
import { policySetKey } from './policy-choice.js';
import { requestIdentity } from './request-identity.js';
import { routeKey } from './route.js';
import { type ResponseFacts, settlerFor, settles } from './settle-request.js';
import { isThenable } from './thenable.js';
import { type HttpVerdict, toHttpVerdict } from './verdict.js';

/** What the adapter knows about the request, framework-neutral. */
export interface RequestFacts {
  /** HTTP method. */
  readonly method: string;
  /** The matched route pattern (`/transfers/:id`), or undefined when the framework cannot say. */
  readonly pattern?: string | undefined;
  /** The request path (query string allowed: it is dropped). Used only when `pattern` is undefined. */
  readonly path: string;
  /** The client IP as the framework determined it (honouring its trust-proxy setting). */
  readonly ip: string | undefined;
  /**
   * The object that stands for this request in double-count protection. Default: `req`
   * when it is an object. Pass the same object from every layer that may limit the request.
   */
  readonly marker?: object;
}

/** What `limitRequest` resolves to for a request that was not skipped. */
export interface RequestLimitResult {
  /** The limiter's decision (shadowed when `shadow` applies per decision). */
  readonly decision: Decision;
  /** The HTTP answer: pass with headers, or deny with status, headers and body. */
  readonly verdict: HttpVerdict;
  /** The route key used (`POST /transfers/:id`). */
  readonly route: string;
  /** True when this request had already been checked by the same limiter and policy set. */
  readonly duplicate: boolean;
  /**
   * With a settle option (`settle`, `skipFailedRequests`, `skipSuccessfulRequests`): call it once
   * the response finished or the connection closed (later calls do nothing; it never rejects).
   * Undefined otherwise, and for a duplicate check (the first layer settles).
   */
  readonly settle?: (response: ResponseFacts) => Promise<void>;
}

/**
 * The first decision recorded for `marker` with this limiter and policy set, or undefined.
 * Adapters rarely need this: `limitRequest` consults it.
 */
export function previousCheck(
  marker: object,
  limiter: Limiter,
  policyNames: readonly string[] | undefined,
): Promise<Decision> | undefined {
  return findCheck(marker, limiter, policySetKey(policyNames));
}

/**
 * The decision as shadow mode sees it: every policy marked shadow and the request allowed.
 * The outcome stays (`over_limit`, `unavailable`) so it can still be reported; `shadowed`
 * is true when the decision was over limit.
 */
export function shadowDecision(decision: Decision): Decision {
  const results = decision.results.map((r) => (r.shadow ? r : { ...r, shadow: true }));
  return {
    ...decision,
    allowed: true,
    shadowed: decision.shadowed || decision.outcome === 'over_limit',
    results,
  };
}

/**
 * Builds the `limitRequest(req, facts)` function of `RateLimitHandler` (see there) from
 * options `resolveRateLimitOptions` has validated.
 */
export function createLimitRequest<Req>(
  options: ResolvedRateLimitOptions<Req>,
): (req: Req, facts: RequestFacts) => Promise<RequestLimitResult | undefined> {
  const { policyNames, identity: identityOf, cost: costOption, skip, allowList, denyList, choose } = options;
  // The limiter fixed at construction (undefined when `choose` picks one per request).
  const limiter = options.limiter as Limiter;
  const verdictOptions = { headers: options.headerFormat, shadowHeaders: options.shadowHeaders };
  const policySet = policySetKey(policyNames);
  const reserve = settles(options);

  const finish = (decision: Decision, route: string, duplicate: boolean): RequestLimitResult => {
    // The deny list is enforced in shadow mode too: shadow is about policies.
    const shown = options.shadowDecisions && decision !== FORBIDDEN ? shadowDecision(decision) : decision;
    return { decision: shown, verdict: toHttpVerdict(shown, verdictOptions), route, duplicate };
  };

  /** `finish` with the settle for after the response (settle options set, first check only). */
  const finishReserved = (req: Req, decision: Decision, route: string): RequestLimitResult => ({
    ...finish(decision, route, false),
    settle: settlerFor(options, limiter, req, decision),
  });

  /** The limiter call once the identity is known (may throw: the caller turns that into a rejection). */
  const checkAs = (req: Req, facts: RequestFacts, route: string, value: unknown): Promise<Decision> => {
    const who = requestIdentity(value, facts.ip, options.ipv6Subnet, options.adapter, options.logger);
    if (denyList?.denies(facts.ip, who) === true) return FORBIDDEN_PROMISE;
    const cost = typeof costOption === 'function' ? costOption(req) : costOption;
    if (isThenable(cost))
      return Promise.resolve(cost).then((c) => limiter.check(descriptorOf(who, route, c)));
    return limiter.check(descriptorOf(who, route, cost));
  };

  const descriptorOf = (
    identity: IdentityInput,
    route: string,
    cost: Descriptor['cost'] | undefined,
  ): Descriptor => {
    const descriptor: { -readonly [K in keyof Descriptor]: Descriptor[K] } = { identity, route };
    if (cost !== undefined) descriptor.cost = cost;
    if (policyNames !== undefined) descriptor.policies = policyNames;
    if (reserve) descriptor.reserve = true;
    return descriptor;
  };

  const check = (req: Req, facts: RequestFacts, route: string): Promise<Decision> => {
    try {
      if (identityOf === undefined) return checkAs(req, facts, route, undefined);
      const value = identityOf(req);
      if (isThenable(value)) return Promise.resolve(value).then((v) => checkAs(req, facts, route, v));
      return checkAs(req, facts, route, value);
    } catch (error) {
      return Promise.reject(error);
    }
  };

  const limitChosen = createLimitChosen(options, finish);
  const limitNow = (req: Req, facts: RequestFacts): Promise<RequestLimitResult | undefined> => {
    if (choose !== undefined) return limitChosen(req, facts);
    const route = routeKey(facts.method, facts.pattern, facts.path);
    const marker = facts.marker ?? (typeof req === 'object' && req !== null ? (req as object) : undefined);
    if (marker !== undefined) {
      const previous = findCheck(marker, limiter, policySet);
      if (previous !== undefined) return previous.then((d) => finish(d, route, true));
    }
    // Reserve the slot before anything waits, so concurrent layers cannot both charge.
    const pending = check(req, facts, route);
    if (marker !== undefined) addCheck(marker, limiter, policySet, pending);
    return reserve
      ? pending.then((d) => finishReserved(req, d, route))
      : pending.then((d) => finish(d, route, false));
  };

  return (req: Req, facts: RequestFacts): Promise<RequestLimitResult | undefined> => {
    try {
      if (allowList !== undefined && facts.ip !== undefined && allowList.has(facts.ip)) return SKIPPED;
      if (skip !== undefined) {
        const skipped = skip(req);
        if (isThenable(skipped)) {
          return Promise.resolve(skipped).then((s) => (s === true ? undefined : limitNow(req, facts)));
        }
        if (skipped === true) return SKIPPED;
      }
      return limitNow(req, facts);
    } catch (error) {
      return Promise.reject(error);
    }
  };
}

const SKIPPED: Promise<undefined> = Promise.resolve(undefined);
