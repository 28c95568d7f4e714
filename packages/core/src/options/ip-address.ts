/**
 * IP address parsing, canonical formatting and prefix masking. Pure functions over bytes,
 * no platform APIs: IPv4 is 4 bytes, IPv6 16 bytes. IPv4-mapped IPv6 (`::ffff:1.2.3.4`)
 * is read as the IPv4 address it carries.
 */

/** A parsed IP address: its family and its bytes in network order. */
export interface IpAddress {
  readonly version: 4 | 6;
  /** 4 bytes for IPv4, 16 for IPv6. */
  readonly bytes: Uint8Array;
}

const IPV4_OCTET = /^(0|[1-9][0-9]{0,2})$/;
const HEXTET = /^[0-9A-Fa-f]{1,4}$/;

function parseIpv4Bytes(text: string): Uint8Array | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  const bytes = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    const part = parts[i]!;
    if (!IPV4_OCTET.test(part)) return undefined;
    const value = Number(part);
    if (value > 255) return undefined;
    bytes[i] = value;
  }
  return bytes;
}

function parseIpv6Bytes(input: string): Uint8Array | undefined {
  // A zone index (`fe80::1%eth0`) names an interface, not part of the address.
  const zone = input.indexOf('%');
  const text = zone === -1 ? input : input.slice(0, zone);
  if (text.length === 0 || text.length > 45) return undefined;

  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const parseGroups = (part: string): number[] | undefined => {
    if (part === '') return [];
    const groups: number[] = [];
    const pieces = part.split(':');
    for (let i = 0; i < pieces.length; i++) {
      const piece = pieces[i]!;
      if (i === pieces.length - 1 && piece.includes('.')) {
        const v4 = parseIpv4Bytes(piece);
        if (v4 === undefined) return undefined;
        groups.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!);
      } else {
        if (!HEXTET.test(piece)) return undefined;
        groups.push(Number.parseInt(piece, 16));
      }
    }
    return groups;
  };
  const head = parseGroups(halves[0]!);
  const tail = halves.length === 2 ? parseGroups(halves[1]!) : [];
  if (head === undefined || tail === undefined) return undefined;
  // An embedded IPv4 address may only end the address.
  if (halves.length === 2 && halves[0]!.includes('.')) return undefined;
  const total = head.length + tail.length;
  if (halves.length === 1 ? total !== 8 : total > 7) return undefined;
  const groups = [...head, ...new Array<number>(8 - total).fill(0), ...tail];
  const bytes = new Uint8Array(16);
  for (let i = 0; i < 8; i++) {
    bytes[i * 2] = groups[i]! >> 8;
    bytes[i * 2 + 1] = groups[i]! & 0xff;
  }
  return bytes;
}

/** True when 16 bytes are an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`). */
function isIpv4Mapped(bytes: Uint8Array): boolean {
  for (let i = 0; i < 10; i++) if (bytes[i] !== 0) return false;
  return bytes[10] === 0xff && bytes[11] === 0xff;
}

/**
 * Parses an IPv4 or IPv6 address. Accepts a bracketed IPv6 address (`[::1]`) and drops an
 * IPv6 zone index. IPv4-mapped IPv6 comes back as IPv4. IPv4 must be four decimal octets
 * without leading zeros (`010.0.0.1` is ambiguous and rejected).
 *
 * @param text the address as written
 * @returns the address, or undefined when `text` is not an IP address
 */
export function parseIp(text: string): IpAddress | undefined {
  if (typeof text !== 'string') return undefined;
  let value = text.trim();
  if (value.startsWith('[') && value.endsWith(']')) value = value.slice(1, -1);
  if (value.includes(':')) {
    const bytes = parseIpv6Bytes(value);
    if (bytes === undefined) return undefined;
    if (isIpv4Mapped(bytes)) return { version: 4, bytes: bytes.slice(12) };
    return { version: 6, bytes };
  }
  const bytes = parseIpv4Bytes(value);
  return bytes === undefined ? undefined : { version: 4, bytes };
}

/**
 * Formats an address canonically: dotted decimal for IPv4; RFC 5952 for IPv6 (lower case,
 * no leading zeros, the longest run of two or more zero groups compressed to `::`, the
 * first such run on a tie).
 */
export function formatIp(address: IpAddress): string {
  const { bytes } = address;
  if (address.version === 4) return `${bytes[0]}.${bytes[1]}.${bytes[2]}.${bytes[3]}`;
  const groups: number[] = [];
  for (let i = 0; i < 8; i++) groups.push((bytes[i * 2]! << 8) | bytes[i * 2 + 1]!);
  let bestStart = -1;
  let bestLength = 0;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength) {
      bestStart = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = (from: number, to: number) =>
    groups
      .slice(from, to)
      .map((g) => g.toString(16))
      .join(':');
  if (bestLength < 2) return hex(0, 8);
  return `${hex(0, bestStart)}::${hex(bestStart + bestLength, 8)}`;
}

/**
 * The canonical text of an IP address (see `formatIp`), or undefined when `text` is not one.
 * `::ffff:10.0.0.1` becomes `10.0.0.1`; `2001:DB8:0:0::1` becomes `2001:db8::1`.
 */
export function normalizeIp(text: string): string | undefined {
  const address = parseIp(text);
  return address === undefined ? undefined : formatIp(address);
}

/** The number of bits in an address of this family: 32 or 128. */
export function addressBits(version: 4 | 6): 32 | 128 {
  return version === 4 ? 32 : 128;
}

/**
 * Keeps the first `prefixBits` bits of an address and zeroes the rest.
 *
 * @param address the address
 * @param prefixBits 0..32 for IPv4, 0..128 for IPv6
 */
export function maskIp(address: IpAddress, prefixBits: number): IpAddress {
  const bits = addressBits(address.version);
  if (!Number.isInteger(prefixBits) || prefixBits < 0 || prefixBits > bits) {
    throw new RangeError(`prefix length must be an integer from 0 to ${bits}, got ${prefixBits}`);
  }
  const bytes = address.bytes.slice();
  for (let i = 0; i < bytes.length; i++) {
    const keep = prefixBits - i * 8;
    if (keep >= 8) continue;
    bytes[i] = keep <= 0 ? 0 : bytes[i]! & (0xff << (8 - keep));
  }
  return { version: address.version, bytes };
}
