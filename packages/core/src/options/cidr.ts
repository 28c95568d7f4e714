/**
 * CIDR ranges and IP lists: allow lists, deny lists and trusted-proxy lists. Every range
 * is validated when the list is built; a bad entry throws naming the entry.
 */

import { CIDR_ERROR_BRAND } from '../error-brands.js';
import { addressBits, formatIp, type IpAddress, maskIp, parseIp } from './ip-address.js';

/** A validated CIDR range. */
export interface CidrRange {
  readonly version: 4 | 6;
  /** The network address (host bits zeroed). */
  readonly network: IpAddress;
  readonly prefixBits: number;
}

/** Named ranges accepted wherever a CIDR is (the names proxy-addr and Express use). */
export const NAMED_RANGES: Readonly<Record<string, readonly string[]>> = {
  loopback: ['127.0.0.0/8', '::1/128'],
  linklocal: ['169.254.0.0/16', 'fe80::/10'],
  uniquelocal: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'],
};

/** A CIDR or address string is invalid. `entry` is the offending text. */
export class CidrError extends TypeError {
  /** The brand `isCidrError` reads: it holds across copies of the package, `instanceof` does not. */
  get [CIDR_ERROR_BRAND](): true {
    return true;
  }

  /** Stable machine-readable code. */
  readonly code = 'INVALID_CIDR' as const;
  /** The offending entry as given. */
  readonly entry: unknown;
  /** What is wrong with it, e.g. `has a prefix length above 32`. */
  readonly reason: string;

  /**
   * @param entry the offending entry
   * @param reason why it is invalid
   * @param label where it came from, e.g. `trustProxy`
   */
  constructor(entry: unknown, reason: string, label = 'IP list') {
    super(`${label}: ${JSON.stringify(entry) ?? String(entry)} ${reason}`);
    this.name = 'CidrError';
    this.entry = entry;
    this.reason = reason;
  }
}

/**
 * Parses `'10.0.0.0/8'`, `'2001:db8::/32'` or a single address (`'1.2.3.4'` = `/32`,
 * `'::1'` = `/128`). Host bits after the prefix are ignored (`10.1.2.3/8` is `10.0.0.0/8`).
 * An IPv4-mapped IPv6 range (`::ffff:10.0.0.0/104`) becomes the IPv4 range it covers.
 *
 * @param text the range
 * @param label names the option in error messages
 * @throws CidrError when the address or prefix length is invalid
 */
export function parseCidr(text: string, label?: string): CidrRange {
  if (typeof text !== 'string') throw new CidrError(text, 'is not a string', label);
  const slash = text.indexOf('/');
  const addressText = slash === -1 ? text : text.slice(0, slash);
  const address = parseIp(addressText);
  if (address === undefined) {
    throw new CidrError(text, 'is not an IPv4 or IPv6 address or CIDR range', label);
  }
  const mapped = address.version === 4 && addressText.includes(':');
  let prefixBits: number = addressBits(address.version);
  if (slash !== -1) {
    const prefixText = text.slice(slash + 1);
    if (!/^[0-9]{1,3}$/.test(prefixText)) {
      throw new CidrError(text, 'has a prefix length that is not a whole number', label);
    }
    prefixBits = Number(prefixText);
    const max = mapped ? 128 : addressBits(address.version);
    if (prefixBits > max) throw new CidrError(text, `has a prefix length above ${max}`, label);
    if (mapped) {
      if (prefixBits < 96) {
        throw new CidrError(text, 'is an IPv4-mapped range shorter than /96', label);
      }
      prefixBits -= 96;
    }
  }
  return { version: address.version, network: maskIp(address, prefixBits), prefixBits };
}

/** The canonical text of a range: `10.0.0.0/8`, `2001:db8::/32`. */
export function formatCidr(range: CidrRange): string {
  return `${formatIp(range.network)}/${range.prefixBits}`;
}

function bytesKey(bytes: Uint8Array): string {
  let key = '';
  for (const byte of bytes) key += byte.toString(16).padStart(2, '0');
  return key;
}

/** A set of CIDR ranges that answers "is this address in any of them?". */
export interface IpList {
  /** True when `ip` (any spelling; IPv4-mapped IPv6 counts as IPv4) lies in a range. False for non-IPs. */
  has(ip: string): boolean;
  /** Like `has`, for an address already parsed. */
  hasAddress(address: IpAddress): boolean;
  /** The ranges in canonical form, in the order given. */
  readonly ranges: readonly string[];
}

/**
 * Builds an IP list from CIDR ranges, single addresses and the names `loopback`,
 * `linklocal` and `uniquelocal`. Validated here: a bad entry throws a `CidrError`.
 * Lookups cost one mask and one set lookup per distinct prefix length.
 *
 * @example
 * const blocked = createIpList(['10.0.0.0/8', '2001:db8::/32', '1.2.3.4']);
 * blocked.has('10.1.2.3'); // true
 * @param entries the ranges
 * @param label names the option in error messages (default `IP list`)
 */
export function createIpList(entries: readonly string[] | string, label?: string): IpList {
  const list = typeof entries === 'string' ? [entries] : entries;
  if (!Array.isArray(list)) {
    throw new CidrError(entries, 'must be a CIDR string or an array of them', label);
  }
  const ranges: CidrRange[] = [];
  for (const entry of list) {
    const named = typeof entry === 'string' ? NAMED_RANGES[entry] : undefined;
    if (named !== undefined) for (const range of named) ranges.push(parseCidr(range, label));
    else ranges.push(parseCidr(entry as string, label));
  }
  // Per family: prefix length -> set of network keys.
  const byFamily = { 4: new Map<number, Set<string>>(), 6: new Map<number, Set<string>>() };
  for (const range of ranges) {
    const family = byFamily[range.version];
    let set = family.get(range.prefixBits);
    if (set === undefined) {
      set = new Set();
      family.set(range.prefixBits, set);
    }
    set.add(bytesKey(range.network.bytes));
  }
  const hasAddress = (address: IpAddress): boolean => {
    for (const [prefixBits, set] of byFamily[address.version]) {
      if (set.has(bytesKey(maskIp(address, prefixBits).bytes))) return true;
    }
    return false;
  };
  return {
    has(ip: string): boolean {
      const address = parseIp(ip);
      return address !== undefined && hasAddress(address);
    },
    hasAddress,
    ranges: ranges.map(formatCidr),
  };
}
