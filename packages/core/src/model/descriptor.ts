/** Who and what a check is about: identities with their kinds, and the descriptor an adapter builds. */

/**
 * Where an identity came from. Each kind is its own namespace: no value of one kind ever
 * shares state with a value of another (an API key spelled `127.0.0.1` is not the client
 * 127.0.0.1).
 * - `ip`: the client address, as the adapters derive it (IPv6 grouped by prefix);
 * - `key`: a credential the request carries, such as an API key header;
 * - `app`: the application's own id (a tenant, a user): what a plain string means.
 */
export type IdentityKind = 'ip' | 'key' | 'app';

/** An identity with its kind: `{ kind: 'key', value: apiKey }`. */
export interface Identity {
  readonly kind: IdentityKind;
  readonly value: string;
}

/** An `Identity`, or a string: an identity of kind `app`. */
export type IdentityInput = string | Identity;

/** What an adapter knows about one request, built from trusted request data. */
export interface Descriptor {
  /**
   * Who is limited: a string (kind `app`: a tenant, a user) or an `Identity` with its kind
   * (`{ kind: 'key', value: apiKey }`, `{ kind: 'ip', value: ipIdentity(address) }`).
   * Never logged or returned.
   */
  readonly identity: IdentityInput;
  /** Normalized route, method first: `POST /transfers/:id`. */
  readonly route?: string;
  /**
   * Units to charge. A number applies to every policy; a record sets it per policy name.
   * Where unset for a policy, the policy's own `cost` applies (default 1).
   */
  readonly cost?: number | Readonly<Record<string, number>>;
  /** Names of the limiter's policies that apply to this request; all when unset. */
  readonly policies?: readonly string[];
  /**
   * Optional idempotency key (a request id): a retried check with the same key returns
   * the first decision instead of charging twice.
   */
  readonly requestId?: string;
  /**
   * Keep this check's charge as a reservation that `limiter.settle(decision, units)` can settle to
   * the actual cost once the handler ran (the cost charged now is the estimate). Unset: the
   * decision cannot be settled (a settle of it does nothing).
   */
  readonly reserve?: boolean;
  /**
   * Waiting: the longest this check may wait for its turn, in ms (at most one hour, as a policy's),
   * for every applying policy that can wait (token bucket, GCRA), on any limiter; overrides the
   * policies' own `maxWaitMs`. 0: never wait. Unset: each policy's `maxWaitMs`.
   */
  readonly maxWaitMs?: number;
  /**
   * Cancels a check waiting for its turn: the reserved units are given back and the check resolves
   * denied (`over_limit`, `retryAfterMs` the time that was left to its turn). Or a function that
   * makes it, called only when the check waits (nothing is made for a check answered at once); one
   * that throws or returns no AbortSignal gives the turn back and the check rejects (a TypeError).
   */
  readonly signal?: AbortSignal | (() => AbortSignal);
}
