/**
 * The client address of a request: the socket address by default, forwarded headers only
 * as far as the app trusts its proxies. And `ipIdentity`, which turns an address into a
 * rate-limit identity (IPv6 grouped by prefix, since one subscriber usually holds a /56
 * or a /64 and can rotate addresses inside it at will).
 */
import { OPTION_DEFAULTS } from '../options/defaults.js';
import { createIpList, type IpList } from './cidr.js';
import { parseForwarded, parseXForwardedFor } from './forwarded.js';
import { formatIp, type IpAddress, maskIp, parseIp } from './ip-address.js';
import { WARNING_CODES, warnOnce } from './warn.js';

/**
 * Which proxies to believe:
 * - `false` (default): none; the socket address is the client.
 * - `true`: every hop. Dangerous: any client can write `X-Forwarded-For` and pick its own
 *   address (and so its own rate-limit identity). Emits a one-time warning.
 * - a number `n`: the `n` hops nearest the app are proxies (`1` = one load balancer).
 * - CIDR strings (an array, or one comma-separated string) and the names `loopback`,
 *   `linklocal`, `uniquelocal`: hops whose address is in these ranges are proxies.
 * - an `IpList`, or a function `(address, hop) => boolean` (hop 0 is the socket).
 */
export type TrustProxy =
  | boolean
  | number
  | string
  | readonly string[]
  | IpList
  | ((address: string, hop: number) => boolean);

/** Request headers: a `Headers`-like object with `get(name)`, or a record such as Node's `req.headers`. */
export type HeaderReader =
  | { get(name: string): string | null | undefined }
  | Readonly<Record<string, string | readonly string[] | undefined>>;

/** Which header carries the proxy chain. */
export type ProxyHeader = 'x-forwarded-for' | 'forwarded';

/** What `clientIp` needs to know about one request. */
export interface ClientIpInput {
  /** The socket's peer address (`req.socket.remoteAddress`); undefined when unknown. */
  readonly remoteAddress: string | undefined;
  readonly headers?: HeaderReader;
  /** Default `false`: the socket address only. */
  readonly trustProxy?: TrustProxy;
  /**
   * The header your proxies write: `x-forwarded-for` (default) or `forwarded` (RFC 7239).
   * Only this one is read, so a client cannot slip in the other.
   */
  readonly proxyHeader?: ProxyHeader;
}

/** A compiled trust decision: is the hop at `index` (0 = socket) a trusted proxy? */
export type TrustFunction = (address: IpAddress | undefined, hop: number) => boolean;

const compiledCache = new WeakMap<object, TrustFunction>();
const stringCache = new Map<string, TrustFunction>();

/**
 * Validates a `trustProxy` setting and compiles it to a function. Called once at
 * construction by adapters; `clientIp` caches compiled strings, arrays and lists itself.
 *
 * @param trust the setting
 * @param label names the option in error messages
 * @throws TypeError / CidrError naming the option and value
 */
export function compileTrustProxy(trust: TrustProxy | undefined, label = 'trustProxy'): TrustFunction {
  if (trust === undefined || trust === false) return () => false;
  if (trust === true) {
    warnOnce(
      WARNING_CODES.PERMISSIVE_TRUST_PROXY,
      `${label} is true: every forwarded hop is believed, so any client can choose its own IP ` +
        '(and rate-limit identity) with X-Forwarded-For. Set it to the number of proxies in front ' +
        'of the app or to their addresses.',
    );
    return () => true;
  }
  if (typeof trust === 'number') {
    if (!Number.isSafeInteger(trust) || trust < 0) {
      throw new TypeError(`${label} must be true, false, a hop count >= 0 or CIDR ranges, got ${trust}`);
    }
    return (_address, hop) => hop < trust;
  }
  if (typeof trust === 'function') {
    return (address, hop) => address !== undefined && trust(formatIp(address), hop) === true;
  }
  if (typeof trust === 'string') {
    const cached = stringCache.get(trust);
    if (cached !== undefined) return cached;
    const list = createIpList(
      trust
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== ''),
      label,
    );
    const fn: TrustFunction = (address) => address !== undefined && list.hasAddress(address);
    if (stringCache.size < 100) stringCache.set(trust, fn);
    return fn;
  }
  if (typeof trust === 'object' && trust !== null) {
    const cached = compiledCache.get(trust);
    if (cached !== undefined) return cached;
    const list = Array.isArray(trust) ? createIpList(trust, label) : (trust as IpList);
    if (typeof list.hasAddress !== 'function') {
      throw new TypeError(`${label} must be true, false, a hop count or CIDR ranges, got an object`);
    }
    const fn: TrustFunction = (address) => address !== undefined && list.hasAddress(address);
    compiledCache.set(trust, fn);
    return fn;
  }
  throw new TypeError(`${label} must be true, false, a hop count or CIDR ranges, got ${typeof trust}`);
}

/** Reads one header from either kind of header object; repeated headers are joined with `,`. */
export function readHeader(headers: HeaderReader | undefined, name: string): string | undefined {
  if (headers === undefined || headers === null) return undefined;
  const reader = headers as { get?: unknown };
  if (typeof reader.get === 'function') {
    const value = (headers as { get(name: string): string | null | undefined }).get(name);
    return value ?? undefined;
  }
  const record = headers as Readonly<Record<string, string | readonly string[] | undefined>>;
  let value = record[name];
  if (value === undefined) {
    for (const key of Object.keys(record)) {
      if (key.toLowerCase() === name) {
        value = record[key];
        break;
      }
    }
  }
  if (value === undefined) return undefined;
  return typeof value === 'string' ? value : value.join(',');
}

/**
 * The client's IP address, canonical (`::ffff:1.2.3.4` -> `1.2.3.4`, IPv6 per RFC 5952).
 *
 * Walks from the socket towards the client: while the current hop is a trusted proxy, the
 * next address to the left in the proxy header becomes the candidate. The walk stops at the
 * first untrusted hop, or at an entry that is not an IP address (`unknown`, garbage), in
 * which case the last valid address is returned. The result is never a value a client
 * could write unless `trustProxy` says so.
 *
 * @returns the address, or undefined when the socket address is unknown or not an IP and
 *   no trusted hop supplies one
 */
export function clientIp(input: ClientIpInput): string | undefined {
  const socket = input.remoteAddress === undefined ? undefined : parseIp(input.remoteAddress);
  const trust = compileTrustProxy(input.trustProxy);
  const header = input.proxyHeader ?? 'x-forwarded-for';
  if (header !== 'x-forwarded-for' && header !== 'forwarded') {
    throw new TypeError(`proxyHeader must be 'x-forwarded-for' or 'forwarded', got ${String(header)}`);
  }
  let current = socket;
  if (trust(socket, 0)) {
    const raw = readHeader(input.headers, header);
    const hops =
      raw === undefined ? [] : header === 'forwarded' ? parseForwarded(raw) : parseXForwardedFor(raw);
    // hops: client first, nearest proxy last. Hop i (0 = socket) is followed by hops[len - 1 - i].
    for (let i = 0; i < hops.length; i++) {
      if (i > 0 && !trust(current, i)) break;
      const next = parseIp(hops[hops.length - 1 - i]!);
      if (next === undefined) break;
      current = next;
    }
  }
  return current === undefined ? undefined : formatIp(current);
}

/** Options of `ipIdentity`. */
export interface IpIdentityOptions {
  /**
   * Prefix length that groups IPv6 clients (default 56, a typical residential delegation).
   * `128` or `false` keeps whole addresses.
   */
  readonly ipv6Subnet?: number | false;
}

/**
 * The IPv4 address a NAT64 address carries (RFC 6052, the well-known prefix `64:ff9b::/96`:
 * the last 32 bits), or undefined for any other address.
 */
function nat64Ipv4(address: IpAddress): IpAddress | undefined {
  const b = address.bytes;
  if (address.version !== 6 || b[0] !== 0x00 || b[1] !== 0x64 || b[2] !== 0xff || b[3] !== 0x9b) {
    return undefined;
  }
  for (let i = 4; i < 12; i++) if (b[i] !== 0) return undefined;
  return { version: 4, bytes: b.slice(12) };
}

/**
 * Turns an address into the value of a rate-limit identity of kind `ip`: IPv4 as the canonical
 * address, IPv6 as the masked network with its prefix (`2001:db8:0:12ab::1` ->
 * `2001:db8:0:1200::/56`). A NAT64 address (`64:ff9b::/96`, RFC 6052) is the IPv4 client it
 * carries (`64:ff9b::198.51.100.7` -> `198.51.100.7`), not one /56 shared by every client behind
 * the translator. A value that is not an IP address is returned unchanged.
 *
 * @throws RangeError when `ipv6Subnet` is not an integer from 1 to 128 (or false)
 */
export function ipIdentity(ip: string, options: IpIdentityOptions = {}): string {
  const subnet = options.ipv6Subnet ?? OPTION_DEFAULTS.ipv6Subnet;
  if (subnet !== false && (!Number.isInteger(subnet) || subnet < 1 || subnet > 128)) {
    throw new RangeError(`ipv6Subnet must be an integer from 1 to 128 or false, got ${String(subnet)}`);
  }
  const address = parseIp(ip);
  if (address === undefined) return ip;
  const embedded = nat64Ipv4(address);
  if (embedded !== undefined) return formatIp(embedded);
  if (address.version === 4 || subnet === false || subnet === 128) return formatIp(address);
  return `${formatIp(maskIp(address, subnet))}/${subnet}`;
}
