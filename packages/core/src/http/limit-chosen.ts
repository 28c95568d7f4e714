/**
 * The request path when `choose` picks the limiter and policies per request (`policies` or
 * `limit` as a function): the same steps as the fixed path of `createLimitRequest`, kept apart so
 * that path pays nothing for this one, with the chosen limiter and names, or the failed choice's
 * `unavailable` decision.
 */
import type { Decision, Descriptor } from '../types.js';
import { addCheck, findCheck } from './check-records.js';
import { FORBIDDEN_PROMISE } from './forbidden.js';
import type { RequestFacts, RequestLimitResult } from './limit-request.js';
import type { ResolvedRateLimitOptions } from './options.js';
import { type ChoiceAnswer, PolicyChoiceFailure } from './policy-choice.js';
import { requestIdentity } from './request-identity.js';
import { routeKey } from './route.js';
import { settlerFor, settles } from './settle-request.js';
import { isThenable } from './thenable.js';

type PolicyChoiceOf = Exclude<ChoiceAnswer, PolicyChoiceFailure>;

/**
 * Builds the chosen-policies request path from resolved options with `choose` set; `finish`
 * turns a decision into the result as the fixed path does (shadow, verdict).
 */
export function createLimitChosen<Req>(
  options: ResolvedRateLimitOptions<Req>,
  finish: (decision: Decision, route: string, duplicate: boolean) => RequestLimitResult,
): (req: Req, facts: RequestFacts) => Promise<RequestLimitResult> {
  const { identity: identityOf, cost: costOption } = options;
  const choose = options.choose!;
  const reserve = settles(options);

  const checkAs = (choice: PolicyChoiceOf, req: Req, facts: RequestFacts, route: string, value: unknown) => {
    const who = requestIdentity(value, facts.ip, options.ipv6Subnet, options.adapter, options.logger);
    if (options.denyList?.denies(facts.ip, who) === true) return FORBIDDEN_PROMISE;
    const cost = typeof costOption === 'function' ? costOption(req) : costOption;
    const descriptorOf = (given: Descriptor['cost'] | undefined): Descriptor => {
      const descriptor: { -readonly [K in keyof Descriptor]: Descriptor[K] } = { identity: who, route };
      const c = chosenCost(choice, given);
      if (c !== undefined) descriptor.cost = c;
      if (choice.policyNames !== undefined) descriptor.policies = choice.policyNames;
      if (reserve) descriptor.reserve = true;
      return descriptor;
    };
    if (isThenable(cost)) return Promise.resolve(cost).then((c) => choice.limiter.check(descriptorOf(c)));
    return choice.limiter.check(descriptorOf(cost));
  };

  const check = (choice: PolicyChoiceOf, req: Req, facts: RequestFacts, route: string): Promise<Decision> => {
    try {
      if (identityOf === undefined) return checkAs(choice, req, facts, route, undefined);
      const value = identityOf(req);
      if (isThenable(value)) return Promise.resolve(value).then((v) => checkAs(choice, req, facts, route, v));
      return checkAs(choice, req, facts, route, value);
    } catch (error) {
      return Promise.reject(error);
    }
  };

  /** The result of the first check of a request; with settle options, its settle by the chosen limiter. */
  const finishFirst = (choice: PolicyChoiceOf, req: Req, decision: Decision, route: string) => {
    const result = finish(decision, route, false);
    return reserve ? { ...result, settle: settlerFor(options, choice.limiter, req, decision) } : result;
  };

  const limitWith = (answer: ChoiceAnswer, req: Req, facts: RequestFacts, route: string) => {
    if (answer instanceof PolicyChoiceFailure) return Promise.resolve(finish(answer.decision, route, false));
    const marker = facts.marker ?? (typeof req === 'object' && req !== null ? (req as object) : undefined);
    if (marker !== undefined) {
      const previous = findCheck(marker, answer.limiter, answer.policySet);
      if (previous !== undefined) return previous.then((d) => finish(d, route, true));
    }
    const pending = check(answer, req, facts, route);
    if (marker !== undefined) addCheck(marker, answer.limiter, answer.policySet, pending);
    return pending.then((d) => finishFirst(answer, req, d, route));
  };

  return (req, facts) => {
    const route = routeKey(facts.method, facts.pattern, facts.path);
    const answer = choose(req);
    if (answer instanceof Promise) return answer.then((a) => limitWith(a, req, facts, route));
    return limitWith(answer, req, facts, route);
  };
}

/**
 * A cost record as the chosen policies read it: with `policies` answering policies of its own, the
 * record may name the policies of every tier, and a request is charged by the entries of its own
 * (the others are dropped here, so the limiter does not refuse them as unknown).
 */
function chosenCost(
  choice: PolicyChoiceOf,
  cost: Descriptor['cost'] | undefined,
): Descriptor['cost'] | undefined {
  if (typeof cost !== 'object' || cost === null || choice.policyNames !== undefined) return cost;
  const { policies } = choice.limiter;
  const chosen = (name: string) => policies.some((p) => p.name === name);
  if (Object.keys(cost).every(chosen)) return cost;
  return Object.fromEntries(Object.entries(cost).filter(([name]) => chosen(name)));
}
