import { describe, expect, it } from 'vitest';
import { createDenyList, isDenyList, toDenyList } from './deny-list.js';

describe('createDenyList', () => {
  it('matches IPv4 and IPv6 client addresses by CIDR, mapped IPv4 included', () => {
    const list = createDenyList(['203.0.113.0/24', '2001:db8::/32']);
    expect(list.denies('203.0.113.77', { kind: 'ip', value: '203.0.113.77' })).toBe(true);
    expect(list.denies('::ffff:203.0.113.9', 'tenant')).toBe(true);
    expect(list.denies('2001:db8:1::5', { kind: 'ip', value: '2001:db8:1::/56' })).toBe(true);
    expect(list.denies('203.0.114.1', { kind: 'ip', value: '203.0.114.1' })).toBe(false);
    expect(list.denies('2001:db9::1', { kind: 'ip', value: '2001:db9::/56' })).toBe(false);
    expect(list.denies(undefined, 'tenant')).toBe(false);
    expect(list.size).toBe(2);
  });

  it('an ip identity the app returns is matched too', () => {
    const list = createDenyList({ ip: ['198.51.100.0/24'] });
    expect(list.denies('10.0.0.1', { kind: 'ip', value: '198.51.100.4' })).toBe(true);
  });

  it('keeps the identity kinds apart: a key is not an app id nor a client address', () => {
    const list = createDenyList({ key: ['k1', '10.0.0.1'], app: ['tenant-9'] });
    expect(list.denies(undefined, { kind: 'key', value: 'k1' })).toBe(true);
    expect(list.denies(undefined, 'k1')).toBe(false);
    expect(list.denies(undefined, { kind: 'app', value: 'k1' })).toBe(false);
    expect(list.denies(undefined, 'tenant-9')).toBe(true);
    expect(list.denies(undefined, { kind: 'app', value: 'tenant-9' })).toBe(true);
    expect(list.denies(undefined, { kind: 'key', value: 'tenant-9' })).toBe(false);
    expect(list.denies('10.0.0.1', { kind: 'ip', value: '10.0.0.1' })).toBe(false);
  });

  it('replace swaps every entry; a bad replacement throws naming it and keeps the old list', () => {
    const list = createDenyList({ key: ['old'] });
    list.replace({ ip: ['10.0.0.0/8'] });
    expect(list.denies(undefined, { kind: 'key', value: 'old' })).toBe(false);
    expect(list.denies('10.1.2.3', 'x')).toBe(true);
    expect(() => list.replace({ ip: ['10.0.0.0/8'], key: [7 as unknown as string] })).toThrow(
      'denyList.replace: "denyList.key" must be a non-empty string, got 7',
    );
    expect(list.denies('10.1.2.3', 'x')).toBe(true);
    expect(list.size).toBe(1);
  });

  it('rejects bad entries at construction, naming the option and the value', () => {
    expect(() => createDenyList(['1.2.3.4/40'])).toThrow(
      'createDenyList: "denyList.ip" has a prefix length above 32, got "1.2.3.4/40"',
    );
    expect(() => toDenyList({ ip: 'x' })).toThrow(
      'rateLimit: "denyList.ip" must be an array of CIDR ranges, got "x"',
    );
    expect(() => toDenyList(null)).toThrow(/rateLimit: "denyList" must be an array/);
    expect(() => toDenyList({ kye: [] })).toThrow(/"denyList\.kye" is not a kind of deny-list entry/);
  });

  it('toDenyList keeps a DenyList as it is, so replacing it reaches every adapter', () => {
    const list = createDenyList();
    expect(toDenyList(list)).toBe(list);
    expect(isDenyList(list)).toBe(true);
    expect(isDenyList({ denies: () => true, replace() {}, size: 0 })).toBe(false);
  });
});

describe('option-name hints', () => {
  it("point other libraries' ban and deny-list names at Sluice's", async () => {
    const { unknownOptionHint } = await import('../options/option-names.js');
    expect(unknownOptionHint('blockDuration', [])).toContain('"ban"');
    expect(unknownOptionHint('blacklist', [])).toBe('did you mean "denyList"?');
  });
});
