/**
 * Deny lists: client IPs (CIDR ranges) and identities by kind answered 403 before any policy
 * is charged, replaceable while the application runs.
 */

import type { IdentityInput, IdentityKind } from '../types.js';
import { CidrError, createIpList, type IpList } from './cidr.js';
import { RateLimitOptionsError } from './options-error.js';

/**
 * What a deny list holds. `ip`: client addresses as CIDR ranges, single addresses or the names
 * `loopback`, `linklocal`, `uniquelocal`, matched against the adapter's client IP. `key` and
 * `app`: identities of that kind (an API key, the application's own id), matched exactly
 * against the request's identity; kinds stay apart, so `key: ['127.0.0.1']` never denies the
 * client 127.0.0.1.
 */
export interface DenyListEntries {
  /** Client IPs: CIDR ranges (IPv4 and IPv6), addresses or range names. */
  readonly ip?: readonly string[];
  /** Identities of kind `key`: credentials such as API keys. */
  readonly key?: readonly string[];
  /** Identities of kind `app`: the application's own ids (what a plain string identity is). */
  readonly app?: readonly string[];
}

/** The `denyList` option: CIDR ranges alone (an array), entries by kind, or a `DenyList`. */
export type DenyListInput = readonly string[] | DenyListEntries | DenyList;

/** A deny list that can be replaced at run time: every adapter using it sees the new list on its next request. */
export interface DenyList {
  /**
   * True when the request is denied: its client IP lies in an `ip` range, or its identity is
   * listed under its kind. Never throws.
   */
  denies(ip: string | undefined, identity: IdentityInput): boolean;
  /**
   * Replaces every entry at once. The new entries are validated first: a bad entry throws a
   * `RateLimitOptionsError` naming it, and the old list stays in force.
   */
  replace(entries: readonly string[] | DenyListEntries): void;
  /** How many entries the list holds now (ranges and identities). */
  readonly size: number;
}

const KINDS: readonly IdentityKind[] = ['ip', 'key', 'app'];

interface Compiled {
  readonly ips: IpList | undefined;
  readonly keys: ReadonlySet<string> | undefined;
  readonly apps: ReadonlySet<string> | undefined;
  readonly size: number;
}

function identities(values: unknown, option: string, source: string): ReadonlySet<string> | undefined {
  if (values === undefined) return undefined;
  if (!Array.isArray(values)) {
    throw new RateLimitOptionsError(option, values, 'must be an array of non-empty strings', source);
  }
  for (const value of values) {
    if (typeof value !== 'string' || value === '') {
      throw new RateLimitOptionsError(option, value, 'must be a non-empty string', source);
    }
  }
  return values.length === 0 ? undefined : new Set(values as string[]);
}

/** Validates entries into the lookup structures; throws naming the option path and the value. */
function compile(entries: unknown, option: string, source: string): Compiled {
  let byKind: DenyListEntries;
  if (Array.isArray(entries)) byKind = { ip: entries as string[] };
  else if (typeof entries === 'object' && entries !== null) {
    byKind = entries as DenyListEntries;
    for (const name of Object.keys(byKind)) {
      if (!KINDS.includes(name as IdentityKind)) {
        throw new RateLimitOptionsError(
          `${option}.${name}`,
          (byKind as Record<string, unknown>)[name],
          `is not a kind of deny-list entry (known: ${KINDS.join(', ')})`,
          source,
        );
      }
    }
  } else {
    throw new RateLimitOptionsError(
      option,
      entries,
      'must be an array of CIDR ranges, { ip, key, app } lists, or a DenyList from createDenyList()',
      source,
    );
  }
  let ips: IpList | undefined;
  if (byKind.ip !== undefined) {
    if (!Array.isArray(byKind.ip)) {
      throw new RateLimitOptionsError(`${option}.ip`, byKind.ip, 'must be an array of CIDR ranges', source);
    }
    try {
      ips = byKind.ip.length === 0 ? undefined : createIpList(byKind.ip);
    } catch (error) {
      if (error instanceof CidrError) {
        throw new RateLimitOptionsError(`${option}.ip`, error.entry, error.reason, source);
      }
      throw error;
    }
  }
  const keys = identities(byKind.key, `${option}.key`, source);
  const apps = identities(byKind.app, `${option}.app`, source);
  const size = (ips?.ranges.length ?? 0) + (keys?.size ?? 0) + (apps?.size ?? 0);
  return { ips, keys, apps, size };
}

function matches(list: Compiled, ip: string | undefined, identity: IdentityInput): boolean {
  if (list.ips !== undefined) {
    if (ip !== undefined && list.ips.has(ip)) return true;
    if (typeof identity === 'object' && identity.kind === 'ip' && identity.value !== ip) {
      if (list.ips.has(identity.value)) return true;
    }
  }
  if (typeof identity === 'string') return list.apps?.has(identity) === true;
  if (identity.kind === 'key') return list.keys?.has(identity.value) === true;
  if (identity.kind === 'app') return list.apps?.has(identity.value) === true;
  return false;
}

const denyLists = new WeakSet<object>();

/** True when `value` is a `DenyList` from `createDenyList`. */
export function isDenyList(value: unknown): value is DenyList {
  return typeof value === 'object' && value !== null && denyLists.has(value);
}

/**
 * A deny list to pass as `denyList` (to one adapter or several) and replace while the
 * application runs, e.g. from a feed of abusive ranges or revoked API keys.
 *
 * @example
 * const denyList = createDenyList({ ip: ['203.0.113.0/24', '2001:db8::/32'], key: ['leaked-key'] });
 * app.use(rateLimit({ limit: 100, window: '1m', denyList }));
 * // later, without a restart:
 * denyList.replace({ ip: ['198.51.100.0/24'] });
 * @param entries CIDR ranges (an array), or lists by kind: `{ ip, key, app }`
 * @throws RateLimitOptionsError naming the bad entry
 */
export function createDenyList(entries: readonly string[] | DenyListEntries = []): DenyList {
  return makeDenyList(entries, 'createDenyList');
}

function makeDenyList(entries: unknown, source: string): DenyList {
  let current = compile(entries, 'denyList', source);
  const list: DenyList = {
    denies: (ip, identity) => matches(current, ip, identity),
    replace(next) {
      current = compile(next, 'denyList', 'denyList.replace');
    },
    get size() {
      return current.size;
    },
  };
  denyLists.add(list);
  return Object.freeze(list);
}

/**
 * The `denyList` option as the request path uses it: a `DenyList` as given, or one built from
 * entries (throwing, under `source`, for a bad entry).
 */
export function toDenyList(value: unknown, source = 'rateLimit'): DenyList {
  return isDenyList(value) ? value : makeDenyList(value, source);
}
