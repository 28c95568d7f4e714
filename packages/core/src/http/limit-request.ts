/**
 * The request path every adapter shares: skip -> choice of policies -> identity -> deny list ->
 * cost -> `limiter.check` -> `toHttpVerdict`, with double-count protection per request.
 */
import type { Limiter } from '../limiter/limiter.js';
import type { Decision, Descriptor, IdentityInput } from '../types.js';
import { addCheck, findCheck } from './check-records.js';
import { FORBIDDEN, FORBIDDEN_PROMISE } from './forbidden.js';
import { type ChoiceAnswer, type PolicyChoice, PolicyChoiceFailure, policySetKey } from './policy-choice.js';
import type { RequestSettle } from './request-end.js';
import { requestIdentity } from './request-identity.js';
import type { ResolvedRateLimitOptions } from './resolved-options.js';
import { routeKey } from './route.js';
import { settlerFor, settles } from './settle-request.js';
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
  /**
   * The request's abort signal, fired when the client goes away: called only for a request that
   * waits for its turn (a policy with `maxWaitMs`), so a waiting request the client gave up on
   * gives its turn back. Node adapters pass `abortSignalOf(res)`; Web runtimes `() => request.signal`.
   */
  readonly abortSignal?: () => AbortSignal;
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
   * With a settle option (`settle`, `skipFailedRequests`, `skipSuccessfulRequests`), or when the
   * decision holds concurrency slots: call it once the handler is done and the response finished
   * or the connection closed (`settleOnResponseEnd`, `settleWhenBodyEnds`; it settles and frees the
   * slots; later calls do nothing; it never rejects). Undefined otherwise, and for a duplicate
   * check (the first layer settles and releases).
   */
  readonly settle?: RequestSettle;
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
 * options `resolveRateLimitOptions` has validated. One path for every form of the options: a
 * fixed policy list is a choice that never changes (`options.choose` answers it at once).
 *
 * The steps, in order: skip (allow list, `skip`) -> route -> choose the limiter and policies ->
 * double-count record -> identity -> deny list -> cost -> `limiter.check` -> shadow -> verdict
 * (and, with a settle option, the settle for after the response).
 */
export function createLimitRequest<Req>(
  options: ResolvedRateLimitOptions<Req>,
): (req: Req, facts: RequestFacts) => Promise<RequestLimitResult | undefined> {
  const { identity: identityOf, cost: costOption, skip, allowList, denyList, choose } = options;
  const verdictOptions = {
    headers: options.headerFormat,
    shadowHeaders: options.shadowHeaders,
    concurrencyStatus: options.concurrencyStatus,
  };
  const reserve = settles(options);

  const finish = (decision: Decision, route: string, duplicate: boolean): RequestLimitResult => {
    // The deny list is enforced in shadow mode too: shadow is about policies.
    const shown = options.shadowDecisions && decision !== FORBIDDEN ? shadowDecision(decision) : decision;
    return { decision: shown, verdict: toHttpVerdict(shown, verdictOptions), route, duplicate };
  };

  /**
   * The result of a request's first check; with settle options or concurrency slots held, what the
   * adapter calls once the response ended (the settle by the chosen limiter, the slots' release).
   */
  const finishFirst = (choice: PolicyChoice, req: Req, decision: Decision, route: string) => {
    const result = finish(decision, route, false);
    const release = choice.limiter.hasSlots(decision);
    if (!reserve && !release) return result;
    return {
      ...result,
      settle: settlerFor(options, choice.limiter, req, decision, { settle: reserve, release }),
    };
  };

  /** The limiter call once the identity is known (may throw: the caller turns that into a rejection). */
  const checkAs = (choice: PolicyChoice, req: Req, facts: RequestFacts, route: string, value: unknown) => {
    const who = requestIdentity(value, facts.ip, options.ipv6Subnet, options.adapter, options.logger);
    if (denyList?.denies(facts.ip, who) === true) return FORBIDDEN_PROMISE;
    const cost = typeof costOption === 'function' ? costOption(req) : costOption;
    if (isThenable(cost))
      return Promise.resolve(cost).then((c) =>
        choice.limiter.check(descriptorOf(choice, facts, who, route, c)),
      );
    return choice.limiter.check(descriptorOf(choice, facts, who, route, cost));
  };

  const descriptorOf = (
    choice: PolicyChoice,
    facts: RequestFacts,
    identity: IdentityInput,
    route: string,
    given: Descriptor['cost'] | undefined,
  ): Descriptor => {
    const descriptor: { -readonly [K in keyof Descriptor]: Descriptor[K] } = { identity, route };
    const cost = chosenCost(choice, given);
    if (cost !== undefined) descriptor.cost = cost;
    if (choice.policyNames !== undefined) descriptor.policies = choice.policyNames;
    if (reserve) descriptor.reserve = true;
    // A request that waits for its turn gives it back when the client goes away (the signal is
    // made only then).
    if (facts.abortSignal !== undefined) descriptor.signal = facts.abortSignal;
    return descriptor;
  };

  const check = (choice: PolicyChoice, req: Req, facts: RequestFacts, route: string): Promise<Decision> => {
    try {
      if (identityOf === undefined) return checkAs(choice, req, facts, route, undefined);
      const value = identityOf(req);
      if (isThenable(value)) return Promise.resolve(value).then((v) => checkAs(choice, req, facts, route, v));
      return checkAs(choice, req, facts, route, value);
    } catch (error) {
      return Promise.reject(error);
    }
  };

  const limitWith = (
    answer: ChoiceAnswer,
    req: Req,
    facts: RequestFacts,
    route: string,
  ): Promise<RequestLimitResult> => {
    if (answer instanceof PolicyChoiceFailure) return Promise.resolve(finish(answer.decision, route, false));
    const marker = facts.marker ?? (typeof req === 'object' && req !== null ? (req as object) : undefined);
    if (marker !== undefined) {
      const previous = findCheck(marker, answer.limiter, answer.policySet);
      if (previous !== undefined) return previous.then((d) => finish(d, route, true));
    }
    // Reserve the slot before anything waits, so concurrent layers cannot both charge.
    const pending = check(answer, req, facts, route);
    if (marker !== undefined) addCheck(marker, answer.limiter, answer.policySet, pending);
    return pending.then((d) => finishFirst(answer, req, d, route));
  };

  const limitNow = (req: Req, facts: RequestFacts): Promise<RequestLimitResult> => {
    const route = routeKey(facts.method, facts.pattern, facts.path);
    const answer = choose(req);
    if (answer instanceof Promise) return answer.then((a) => limitWith(a, req, facts, route));
    return limitWith(answer, req, facts, route);
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

/**
 * A cost record as the chosen policies read it: with `policies` answering policies of its own, the
 * record may name the policies of every tier, and a request is charged by the entries of its own
 * (the others are dropped here, so the limiter does not refuse them as unknown). A number, or a
 * record for a fixed list (its names were checked at construction), passes as it is.
 */
function chosenCost(
  choice: PolicyChoice,
  cost: Descriptor['cost'] | undefined,
): Descriptor['cost'] | undefined {
  if (typeof cost !== 'object' || cost === null || choice.policyNames !== undefined) return cost;
  const { policies } = choice.limiter;
  const chosen = (name: string) => policies.some((p) => p.name === name);
  if (Object.keys(cost).every(chosen)) return cost;
  return Object.fromEntries(Object.entries(cost).filter(([name]) => chosen(name)));
}
