/** The options an adapter shares, as `resolveRateLimitOptions` leaves them: what the request path reads. */
import type { Limiter } from '../limiter/limiter.js';
import type { IpList } from '../options/cidr.js';
import type { HeaderFormat } from '../options/defaults.js';
import type { DenyList } from '../options/deny-list.js';
import type { CostValue } from '../options/index.js';
import type { IdentityInput } from '../types.js';
import type { SluiceLogger } from '../warn.js';
import type { PolicyChooser } from './policy-choice.js';
import type { SettleOptions } from './settle-request.js';

/** The options as validated, defaults applied, and the limiter built or selected. */
export interface ResolvedRateLimitOptions<Req> extends SettleOptions<Req> {
  /** The adapter these options were resolved for (`express`, `koa`, `hono`, `nestjs`). */
  readonly adapter: string;
  /** Where coded warnings and errors go (`logger`); undefined: `console.warn`, once per code. */
  readonly logger: SluiceLogger | undefined;
  /**
   * The limiter that decides: the shared one, or the one built from `policies` or the shorthand.
   * Undefined when `limit` or `policies` is a function and no shared `limiter` is given: each
   * value the function answers is compiled into a limiter of its own (see `choose`).
   */
  readonly limiter: Limiter | undefined;
  /** The limiter's policies that apply here, or undefined for all of them (or when `choose` picks them). */
  readonly policyNames: readonly string[] | undefined;
  /**
   * Chooses the limiter and policies of a request: always the same for a fixed list, per request
   * when `policies` or `limit` is a function.
   */
  readonly choose: PolicyChooser<Req>;
  /** The header format (`headers`). */
  readonly headerFormat: HeaderFormat;
  /** Shadow policies shown in the headers too (`shadowHeaders`). */
  readonly shadowHeaders: boolean;
  /** Status of a request a concurrency policy turned away (`concurrencyStatus`). */
  readonly concurrencyStatus: 429 | 503;
  /** Shadow forced by the `shadow` option. */
  readonly shadow: boolean;
  /**
   * Shadow applied to each decision rather than built into the policies: `shadow` with a
   * shared limiter or a policy from `definePolicy()`.
   */
  readonly shadowDecisions: boolean;
  /** Prefix length grouping IPv6 clients in the default identity, or false. */
  readonly ipv6Subnet: number | false;
  /** The identity function, or undefined for the default (the client IP). */
  readonly identity:
    | ((req: Req) => IdentityInput | undefined | Promise<IdentityInput | undefined>)
    | undefined;
  /** The cost as given (number, record or function), or undefined for the policies' own. */
  readonly cost: CostValue | ((req: Req) => CostValue | Promise<CostValue>) | undefined;
  /** The skip function, or undefined. */
  readonly skip: ((req: Req) => boolean | Promise<boolean>) | undefined;
  /** IPs never limited, or undefined. */
  readonly allowList: IpList | undefined;
  /** Client IPs and identities answered 403 before any charge, or undefined. */
  readonly denyList: DenyList | undefined;
}
