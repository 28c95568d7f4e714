/**
 * The request path every adapter shares: skip -> identity -> cost -> `limiter.check` ->
 * `toHttpVerdict`, with double-count protection per request.
 */
import type { Limiter } from '../limiter/index.js';
import type { Decision, Descriptor, IdentityInput } from '../types.js';
import type { IpList } from './cidr.js';
import type { HeaderFormat } from './headers.js';
import { requestIdentity } from './request-identity.js';
import { routeKey } from './route.js';
import { type HttpVerdict, toHttpVerdict } from './verdict.js';
import { WARNING_CODES, warnOnce } from './warn.js';

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

/** What `decide` resolves to for a request that was not skipped. */
export interface DecideResult {
  readonly decision: Decision;
  readonly verdict: HttpVerdict;
  /** The route key used (`POST /transfers/:id`). */
  readonly route: string;
  /** True when this request had already been checked by the same limiter and policy set. */
  readonly duplicate: boolean;
}

/** One check made for a request marker: a list, usually of one entry. */
interface CheckRecord {
  readonly limiter: Limiter;
  readonly policySet: string;
  readonly decision: Promise<Decision>;
  readonly next: CheckRecord | undefined;
}

/**
 * A base class whose constructor returns the object it is given, so a subclass can put a
 * private field on any object (the "return override" idiom). Private fields are invisible to
 * the application: not enumerable, not reflected, not copied by spread.
 */
const ReturnGiven = function (this: unknown, target: object) {
  return target;
} as unknown as new (
  target: object,
) => object;

/**
 * The checks made so far for a request marker, kept on the marker itself in a private field
 * (`RequestMarks` 'private-field'). On objects of a class with a stable shape (Hono's
 * `Context`) adding it costs about 0.3k instructions, a `WeakMap` entry about 2.6k.
 */
class CheckStamp extends ReturnGiven {
  #checks: CheckRecord | undefined;

  static read(marker: object): CheckRecord | undefined {
    return #checks in marker ? (marker as CheckStamp).#checks : undefined;
  }

  static write(marker: object, record: CheckRecord): void {
    if (!(#checks in marker)) new CheckStamp(marker);
    (marker as CheckStamp).#checks = record;
  }

  /** Drops a stamp the marker has (a later check went to the WeakMap); adds none. */
  static clear(marker: object): void {
    if (#checks in marker) (marker as CheckStamp).#checks = undefined;
  }
}

/**
 * The checks kept beside the marker (`RequestMarks` 'weak-map', and markers that cannot take
 * a field: frozen, sealed, non-extensible objects). On objects whose shape is built per
 * request (Express's `req`) adding any property costs about 20k instructions, as V8 makes a
 * new hidden class for each; a `WeakMap` entry leaves the object alone (about 6k).
 */
const checkedElsewhere = new WeakMap<object, CheckRecord>();

/** Where `decide` keeps the checks made for a request marker (see `ResolvedRateLimitSettings`). */
export type RequestMarks = 'private-field' | 'weak-map';

/** The newest record (its `next` chain holds the older ones): only one table holds it. */
function checksOf(marker: object): CheckRecord | undefined {
  return CheckStamp.read(marker) ?? checkedElsewhere.get(marker);
}

function policySetKey(names: readonly string[] | undefined): string {
  return names === undefined ? '*' : [...names].sort().join('\n');
}

function findCheck(marker: object, limiter: Limiter, policySet: string): Promise<Decision> | undefined {
  for (let record = checksOf(marker); record !== undefined; record = record.next) {
    if (record.limiter === limiter && record.policySet === policySet) return record.decision;
  }
  return undefined;
}

/**
 * The first decision recorded for `marker` with this limiter and policy set, or undefined.
 * Adapters rarely need this: `decide` consults it.
 */
export function previousCheck(
  marker: object,
  limiter: Limiter,
  policyNames: readonly string[] | undefined,
): Promise<Decision> | undefined {
  return findCheck(marker, limiter, policySetKey(policyNames));
}

function rememberCheck(
  marker: object,
  limiter: Limiter,
  policySet: string,
  decision: Promise<Decision>,
  marks: RequestMarks,
): void {
  // checksOf, with where the newest record was: the table not written now must drop it.
  const stamped = CheckStamp.read(marker);
  const elsewhere = stamped === undefined ? checkedElsewhere.get(marker) : undefined;
  const record: CheckRecord = { limiter, policySet, decision, next: stamped ?? elsewhere };
  if (marks === 'private-field' && Object.isExtensible(marker)) {
    CheckStamp.write(marker, record);
    if (elsewhere !== undefined) checkedElsewhere.delete(marker);
  } else {
    checkedElsewhere.set(marker, record);
    if (stamped !== undefined) CheckStamp.clear(marker);
  }
}

function isThenable<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as { then?: unknown }).then === 'function'
  );
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

/** What `createDecide` needs: resolved, validated options. */
export interface DecideConfig<Req> {
  readonly adapter: string;
  readonly limiter: Limiter;
  readonly policyNames: readonly string[] | undefined;
  readonly headerFormat: HeaderFormat;
  readonly shadowHeaders: boolean;
  /** Apply shadow mode to each decision (shadow forced on a shared limiter). */
  readonly shadowDecisions: boolean;
  readonly ipv6Subnet: number | false;
  readonly identity:
    | ((req: Req) => IdentityInput | undefined | Promise<IdentityInput | undefined>)
    | undefined;
  readonly cost:
    | Descriptor['cost']
    | ((req: Req) => NonNullable<Descriptor['cost']> | Promise<NonNullable<Descriptor['cost']>>)
    | undefined;
  readonly skip: ((req: Req) => boolean | Promise<boolean>) | undefined;
  /** Client IPs never limited. */
  readonly allowList?: IpList | undefined;
  /** Where the checks made for a request marker are kept. Default: 'private-field'. */
  readonly requestMarks?: RequestMarks | undefined;
}

/**
 * Builds the `decide(req, facts)` function of `ResolvedRateLimit` (see there). Options are
 * assumed valid: `resolveRateLimitOptions` validates them first.
 */
export function createDecide<Req>(
  config: DecideConfig<Req>,
): (req: Req, facts: RequestFacts) => Promise<DecideResult | undefined> {
  const { limiter, policyNames } = config;
  if (config.shadowDecisions) {
    warnOnce(
      WARNING_CODES.SHADOW_WITH_SHARED_LIMITER,
      `${config.adapter} rateLimit(): "shadow" with a shared limiter (or a policy from definePolicy()) lets ` +
        'denied requests through here, but the limiter still reports them as over_limit. Set shadow on the ' +
        'policies themselves to report shadow_over_limit.',
    );
  }
  const verdictOptions = { headers: config.headerFormat, shadowHeaders: config.shadowHeaders };
  const policySet = policySetKey(policyNames);
  const { identity: identityOf, cost: costOption, skip } = config;
  const marks = config.requestMarks ?? 'private-field';

  const finish = (decision: Decision, route: string, duplicate: boolean): DecideResult => {
    const shown = config.shadowDecisions ? shadowDecision(decision) : decision;
    return { decision: shown, verdict: toHttpVerdict(shown, verdictOptions), route, duplicate };
  };

  /** The limiter call once the identity is known (may throw: the caller turns that into a rejection). */
  const checkAs = (req: Req, facts: RequestFacts, route: string, value: unknown): Promise<Decision> => {
    const who = requestIdentity(value, facts.ip, config.ipv6Subnet, config.adapter);
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

  const decideNow = (req: Req, facts: RequestFacts): Promise<DecideResult | undefined> => {
    const route = routeKey(facts.method, facts.pattern, facts.path);
    const marker = facts.marker ?? (typeof req === 'object' && req !== null ? (req as object) : undefined);
    if (marker !== undefined) {
      const previous = findCheck(marker, limiter, policySet);
      if (previous !== undefined) return previous.then((d) => finish(d, route, true));
    }
    // Reserve the slot before anything waits, so concurrent layers cannot both charge.
    const pending = check(req, facts, route);
    if (marker !== undefined) rememberCheck(marker, limiter, policySet, pending, marks);
    return pending.then((d) => finish(d, route, false));
  };

  return (req: Req, facts: RequestFacts): Promise<DecideResult | undefined> => {
    try {
      if (config.allowList !== undefined && facts.ip !== undefined && config.allowList.has(facts.ip)) {
        return SKIPPED;
      }
      if (skip !== undefined) {
        const skipped = skip(req);
        if (isThenable(skipped)) {
          return Promise.resolve(skipped).then((s) => (s === true ? undefined : decideNow(req, facts)));
        }
        if (skipped === true) return SKIPPED;
      }
      return decideNow(req, facts);
    } catch (error) {
      return Promise.reject(error);
    }
  };
}

const SKIPPED: Promise<undefined> = Promise.resolve(undefined);
