import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CidrError, createIpList, formatCidr, parseCidr } from '../options/cidr.js';
import { formatIp, maskIp, normalizeIp, parseIp } from '../options/ip-address.js';
import { ipIdentity } from './client-ip.js';

const ipv4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((b) => b.join('.'));
const ipv6Bytes = fc.uint8Array({ minLength: 16, maxLength: 16 });

describe('parseIp / formatIp', () => {
  it('reads IPv4 and canonical IPv6', () => {
    expect(normalizeIp('10.0.0.1')).toBe('10.0.0.1');
    expect(normalizeIp('2001:DB8:0:0:0:0:0:1')).toBe('2001:db8::1');
    expect(normalizeIp('2001:db8:0:0:1:0:0:1')).toBe('2001:db8::1:0:0:1');
    expect(normalizeIp('2001:db8::1:0:0:0:1')).toBe('2001:db8:0:1::1');
    expect(normalizeIp('2001:db8:1:1:1:1:1:0')).toBe('2001:db8:1:1:1:1:1:0');
    expect(normalizeIp('::')).toBe('::');
    expect(normalizeIp('::1')).toBe('::1');
    expect(normalizeIp('[::1]')).toBe('::1');
    expect(normalizeIp('fe80::1%eth0')).toBe('fe80::1');
  });

  it('treats IPv4-mapped IPv6 as IPv4', () => {
    expect(normalizeIp('::ffff:1.2.3.4')).toBe('1.2.3.4');
    expect(normalizeIp('::FFFF:0102:0304')).toBe('1.2.3.4');
    expect(parseIp('::ffff:1.2.3.4')?.version).toBe(4);
  });

  it('rejects what is not an address', () => {
    for (const bad of [
      '',
      '1.2.3',
      '1.2.3.4.5',
      '256.1.1.1',
      '01.2.3.4',
      '1.2.3.-4',
      '1::2::3',
      '1:2:3:4:5:6:7:8:9',
      '12345::',
      ':1:2:3:4:5:6:7',
      'unknown',
      '_hidden',
      '1.2.3.4::',
      'g::1',
    ]) {
      expect(parseIp(bad), bad).toBeUndefined();
    }
  });

  it('round-trips every IPv4 address', () => {
    fc.assert(
      fc.property(ipv4, (ip) => {
        expect(normalizeIp(ip)).toBe(ip);
      }),
    );
  });

  it('round-trips every IPv6 address through its canonical form', () => {
    fc.assert(
      fc.property(ipv6Bytes, (bytes) => {
        const text = formatIp({ version: 6, bytes });
        const back = parseIp(text)!;
        if (back.version === 4) {
          // Only IPv4-mapped addresses come back as IPv4.
          expect(Array.from(bytes.slice(0, 12))).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255]);
          expect(Array.from(back.bytes)).toEqual(Array.from(bytes.slice(12)));
        } else {
          expect(Array.from(back.bytes)).toEqual(Array.from(bytes));
          expect(formatIp(back)).toBe(text);
          // RFC 5952: lower case, no leading zeros, at most one ::, no single-group ::.
          expect(text).toBe(text.toLowerCase());
          expect(text.split('::').length).toBeLessThanOrEqual(2);
          expect(text).not.toMatch(/(^|:)0[0-9a-f]/);
        }
      }),
    );
  });

  it('masking keeps exactly the prefix bits', () => {
    fc.assert(
      fc.property(ipv6Bytes, fc.integer({ min: 0, max: 128 }), (bytes, prefix) => {
        const masked = maskIp({ version: 6, bytes }, prefix).bytes;
        for (let bit = 0; bit < 128; bit++) {
          const get = (b: Uint8Array) => (b[bit >> 3]! >> (7 - (bit & 7))) & 1;
          expect(get(masked)).toBe(bit < prefix ? get(bytes) : 0);
        }
        // Idempotent.
        expect(Array.from(maskIp({ version: 6, bytes: masked }, prefix).bytes)).toEqual(Array.from(masked));
      }),
    );
  });
});

describe('CIDR lists', () => {
  it('matches IPv4, IPv6 and single addresses', () => {
    const list = createIpList(['10.0.0.0/8', '2001:db8::/32', '1.2.3.4']);
    expect(list.has('10.255.0.1')).toBe(true);
    expect(list.has('11.0.0.1')).toBe(false);
    expect(list.has('2001:db8:ffff::1')).toBe(true);
    expect(list.has('2001:db9::1')).toBe(false);
    expect(list.has('1.2.3.4')).toBe(true);
    expect(list.has('1.2.3.5')).toBe(false);
    expect(list.has('::ffff:10.1.1.1')).toBe(true);
    expect(list.has('not an ip')).toBe(false);
    expect(list.ranges).toEqual(['10.0.0.0/8', '2001:db8::/32', '1.2.3.4/32']);
  });

  it('accepts the named ranges and IPv4-mapped ranges', () => {
    const list = createIpList(['loopback', '::ffff:192.168.0.0/112']);
    expect(list.has('127.0.0.1')).toBe(true);
    expect(list.has('::1')).toBe(true);
    expect(list.has('192.168.3.4')).toBe(true);
    expect(list.has('192.169.0.1')).toBe(false);
  });

  it('masks host bits and formats canonically', () => {
    expect(formatCidr(parseCidr('10.1.2.3/8'))).toBe('10.0.0.0/8');
    expect(formatCidr(parseCidr('2001:DB8:0:12ab::1/56'))).toBe('2001:db8:0:1200::/56');
    expect(formatCidr(parseCidr('0.0.0.0/0'))).toBe('0.0.0.0/0');
  });

  it('rejects bad ranges with clear errors', () => {
    expect(() => parseCidr('10.0.0.0/33')).toThrow('IP list: "10.0.0.0/33" has a prefix length above 32');
    expect(() => parseCidr('10.0.0/8')).toThrow(CidrError);
    expect(() => parseCidr('10.0.0.0/x')).toThrow('not a whole number');
    expect(() => parseCidr('10.0.0.0/')).toThrow(CidrError);
    expect(() => parseCidr('::/129')).toThrow('above 128');
    expect(() => parseCidr('::ffff:1.2.3.4/90')).toThrow('shorter than /96');
    expect(() => createIpList(['10.0.0.0/8', 'nope'], 'allowList')).toThrow(
      'allowList: "nope" is not an IPv4',
    );
  });

  it('an address is in its own range at every prefix, and membership agrees with masking', () => {
    fc.assert(
      fc.property(ipv6Bytes, ipv6Bytes, fc.integer({ min: 0, max: 128 }), (a, b, prefix) => {
        const aText = formatIp({ version: 6, bytes: a });
        const bText = formatIp({ version: 6, bytes: b });
        if (parseIp(aText)?.version !== 6 || parseIp(bText)?.version !== 6) return;
        const list = createIpList([`${aText}/${prefix}`]);
        expect(list.has(aText)).toBe(true);
        const same =
          formatIp(maskIp({ version: 6, bytes: a }, prefix)) ===
          formatIp(maskIp({ version: 6, bytes: b }, prefix));
        expect(list.has(bText)).toBe(same);
      }),
    );
  });

  it('IPv4 ranges round-trip through parse and format', () => {
    fc.assert(
      fc.property(ipv4, fc.integer({ min: 0, max: 32 }), (ip, prefix) => {
        const text = formatCidr(parseCidr(`${ip}/${prefix}`));
        expect(formatCidr(parseCidr(text))).toBe(text);
        expect(createIpList([text]).has(ip)).toBe(true);
      }),
    );
  });
});

describe('ipIdentity', () => {
  it('groups IPv6 by /56 by default', () => {
    expect(ipIdentity('2001:db8:0:12ab::1')).toBe('2001:db8:0:1200::/56');
    expect(ipIdentity('2001:db8:0:12ff:ffff::9')).toBe('2001:db8:0:1200::/56');
    expect(ipIdentity('2001:db8:0:12ab::1', { ipv6Subnet: 64 })).toBe('2001:db8:0:12ab::/64');
    expect(ipIdentity('2001:db8:0:12ab::1', { ipv6Subnet: false })).toBe('2001:db8:0:12ab::1');
  });

  it('keeps IPv4 whole, including mapped addresses, and leaves non-addresses alone', () => {
    expect(ipIdentity('1.2.3.4')).toBe('1.2.3.4');
    expect(ipIdentity('::ffff:1.2.3.4')).toBe('1.2.3.4');
    expect(ipIdentity('unix-socket')).toBe('unix-socket');
  });

  it('reads a NAT64 client (64:ff9b::/96, RFC 6052) as the IPv4 address it carries', () => {
    expect(ipIdentity('64:ff9b::198.51.100.7')).toBe('198.51.100.7');
    expect(ipIdentity('64:ff9b::c633:6407')).toBe('198.51.100.7');
    expect(ipIdentity('64:FF9B:0:0:0:0:C633:6408')).toBe('198.51.100.8');
    expect(ipIdentity('[64:ff9b::c633:6407]', { ipv6Subnet: 64 })).toBe('198.51.100.7');
    expect(ipIdentity('64:ff9b::c633:6407', { ipv6Subnet: false })).toBe('198.51.100.7');
    // Two clients behind one translator are two identities, not one /56.
    expect(ipIdentity('64:ff9b::203.0.113.1')).not.toBe(ipIdentity('64:ff9b::203.0.113.2'));
  });

  it('leaves addresses just outside 64:ff9b::/96 to the IPv6 grouping', () => {
    expect(ipIdentity('64:ff9b:1::c633:6407')).toBe('64:ff9b:1::/56');
    expect(ipIdentity('64:ff9b::1:c633:6407')).toBe('64:ff9b::/56');
    expect(ipIdentity('64:ff9a::c633:6407')).toBe('64:ff9a::/56');
  });

  it('every 64:ff9b::/96 address maps to its embedded IPv4 address (property)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 4, maxLength: 4 }), (v4) => {
        const bytes = new Uint8Array(16);
        bytes.set([0x00, 0x64, 0xff, 0x9b]);
        bytes.set(v4, 12);
        const dotted = `${v4[0]}.${v4[1]}.${v4[2]}.${v4[3]}`;
        expect(ipIdentity(formatIp({ version: 6, bytes }))).toBe(dotted);
        expect(ipIdentity(`64:ff9b::${dotted}`)).toBe(dotted);
      }),
    );
  });

  it('validates the subnet', () => {
    expect(() => ipIdentity('::1', { ipv6Subnet: 0 })).toThrow(RangeError);
    expect(() => ipIdentity('::1', { ipv6Subnet: 129 })).toThrow(RangeError);
  });

  it('every address of a /56 maps to the same identity, which parses back as that network', () => {
    fc.assert(
      fc.property(ipv6Bytes, fc.uint8Array({ minLength: 9, maxLength: 9 }), (bytes, host) => {
        const a = formatIp({ version: 6, bytes });
        if (parseIp(a)?.version !== 6) return;
        const other = bytes.slice();
        other.set(host, 7);
        other[6] = bytes[6]!; // first 56 bits = bytes 0..6
        const b = formatIp({ version: 6, bytes: other });
        if (parseIp(b)?.version !== 6) return;
        expect(ipIdentity(a)).toBe(ipIdentity(b));
        expect(formatCidr(parseCidr(ipIdentity(a)))).toBe(ipIdentity(a));
      }),
    );
  });
});
