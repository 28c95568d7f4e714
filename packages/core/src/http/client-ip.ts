/**
 * `ipIdentity`: a client address (as the framework determined it, honouring its trust-proxy
 * setting) as a rate-limit identity, IPv6 grouped by prefix, since one subscriber usually
 * holds a /56 or a /64 and can rotate addresses inside it at will.
 */
import { OPTION_DEFAULTS } from '../options/defaults.js';
import { formatIp, type IpAddress, maskIp, parseIp } from '../options/ip-address.js';

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
