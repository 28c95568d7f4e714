/**
 * The request path every adapter shares: skip -> identity -> cost -> `limiter.check` ->
 * `toHttpVerdict`, with double-count protection per request.
 */
import type { Limiter } from '../limiter/index.js';
import type { Decision, Descriptor } from '../types.js';
import type { IpList } from './cidr.js';
import { ipIdentity } from './client-ip.js';
import type { HeaderFormat } from './headers.js';
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

/** Identity used when a request has neither an identity nor a client IP. */
export const UNKNOWN_CLIENT_IDENTITY = 'unknown-client';

/** The checks made so far, per request marker: limiter -> policy set -> first decision. */
const checked = new WeakMap<object, Map<Limiter, Map<string, Promise<Decision>>>>();

function policySetKey(names: readonly string[] | undefined): string {
  return names === undefined ? '*' : [...names].sort().join('\n');
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
  return checked.get(marker)?.get(limiter)?.get(policySetKey(policyNames));
}

function rememberCheck(
  marker: object,
  limiter: Limiter,
  policyNames: readonly string[] | undefined,
  decision: Promise<Decision>,
): void {
  let byLimiter = checked.get(marker);
  if (byLimiter === undefined) {
    byLimiter = new Map();
    checked.set(marker, byLimiter);
  }
  let bySet = byLimiter.get(limiter);
  if (bySet === undefined) {
    bySet = new Map();
    byLimiter.set(limiter, bySet);
  }
  bySet.set(policySetKey(policyNames), decision);
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
  readonly identity: ((req: Req) => string | undefined | Promise<string | undefined>) | undefined;
  readonly cost:
    | Descriptor['cost']
    | ((req: Req) => NonNullable<Descriptor['cost']> | Promise<NonNullable<Descriptor['cost']>>)
    | undefined;
  readonly skip: ((req: Req) => boolean | Promise<boolean>) | undefined;
  /** Client IPs never limited. */
  readonly allowList?: IpList | undefined;
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

  const finish = (decision: Decision, route: string, duplicate: boolean): DecideResult => {
    const shown = config.shadowDecisions ? shadowDecision(decision) : decision;
    return { decision: shown, verdict: toHttpVerdict(shown, verdictOptions), route, duplicate };
  };

  const check = async (req: Req, facts: RequestFacts, route: string): Promise<Decision> => {
    let identity: string | undefined;
    if (config.identity !== undefined) {
      const value = await config.identity(req);
      if (value !== undefined && typeof value !== 'string') {
        throw new TypeError(
          `rateLimit: "identity" must return a string or undefined, got ${value === null ? 'null' : typeof value}`,
        );
      }
      if (value !== '') identity = value;
    }
    if (identity === undefined && facts.ip !== undefined && facts.ip !== '') {
      identity = ipIdentity(facts.ip, { ipv6Subnet: config.ipv6Subnet });
    }
    if (identity === undefined) {
      warnOnce(
        WARNING_CODES.NO_CLIENT_IP,
        `${config.adapter} rateLimit(): a request had no client IP and no identity, so it was limited ` +
          `together with every such request. Give an "identity" function or check the proxy settings.`,
      );
      identity = UNKNOWN_CLIENT_IDENTITY;
    }

    const cost = typeof config.cost === 'function' ? await config.cost(req) : config.cost;
    const descriptor: Descriptor = {
      identity,
      route,
      ...(cost !== undefined && { cost }),
      ...(policyNames !== undefined && { policies: policyNames }),
    };
    return limiter.check(descriptor);
  };

  return async (req: Req, facts: RequestFacts): Promise<DecideResult | undefined> => {
    if (config.allowList !== undefined && facts.ip !== undefined && config.allowList.has(facts.ip)) {
      return undefined;
    }
    if (config.skip !== undefined && (await config.skip(req)) === true) return undefined;

    const route = routeKey(facts.method, facts.pattern, facts.path);
    const marker = facts.marker ?? (typeof req === 'object' && req !== null ? (req as object) : undefined);
    if (marker !== undefined) {
      const previous = previousCheck(marker, limiter, policyNames);
      if (previous !== undefined) return finish(await previous, route, true);
    }

    // Reserve the slot before the first await, so concurrent layers cannot both charge.
    const pending = check(req, facts, route);
    if (marker !== undefined) rememberCheck(marker, limiter, policyNames, pending);
    return finish(await pending, route, false);
  };
}
