import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { definePolicy } from '../policy/define-policy.js';
import type { IdentityKind } from '../types.js';
import {
  base64url,
  buildKey,
  encodeKeyComponent,
  identityTag,
  isValidPrefix,
  policyKey,
  requestKey,
} from './build-keys.js';
import { sha256 } from './sha256.js';

const burst = definePolicy({ name: 'burst', rate: '1/s', burst: 20 });
const transfers = definePolicy({ name: 'transfers', algorithm: 'sliding-window', limit: 3, window: '1m' });
const perRoute = definePolicy({ name: 'per-route', limit: 3, window: '1m', scope: 'route' });

/** Redis Cluster's CRC16 (XMODEM) of the hash tag, modulo 16384, computed independently of the code under test. */
function calculateSlot(key: string): number {
  const tag = hashTag(key) ?? key;
  let crc = 0;
  for (const byte of Buffer.from(tag, 'utf8')) {
    crc ^= byte << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % 16384;
}

/** The part Redis Cluster hashes: between the first `{` and the next `}`. */
function hashTag(key: string): string | undefined {
  const open = key.indexOf('{');
  if (open < 0) return undefined;
  const close = key.indexOf('}', open + 1);
  if (close < 0 || close === open + 1) return undefined;
  return key.slice(open + 1, close);
}

describe('sha256', () => {
  it.each([
    '',
    'abc',
    'a'.repeat(55),
    'a'.repeat(56),
    'a'.repeat(64),
    'x'.repeat(10_000),
    'héllo {wörld} 🎉',
  ])('matches node:crypto for %#', (text) => {
    const bytes = new TextEncoder().encode(text);
    expect(Buffer.from(sha256(bytes)).toString('hex')).toBe(createHash('sha256').update(bytes).digest('hex'));
  });
});

describe('base64url', () => {
  it('matches Buffer for any bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 100 }), (bytes) => {
        expect(base64url(bytes)).toBe(Buffer.from(bytes).toString('base64url'));
      }),
    );
  });
});

describe('encodeKeyComponent', () => {
  it('keeps short safe values readable', () => {
    expect(encodeKeyComponent('tenant-42')).toBe('=tenant-42');
    expect(encodeKeyComponent('203.0.113.7')).toBe('=203.0.113.7');
    expect(encodeKeyComponent('a@b.example')).toBe('=a@b.example');
  });

  it.each([
    ['empty', ''],
    ['braces', '{evil}'],
    ['half a tag', 'x}'],
    ['colon', 'a:b'],
    ['IPv6', '2001:db8::1'],
    ['Unicode', 'Ωmega-ユーザー-🎉'],
    ['spaces', 'GET /limited'],
    ['lone surrogate', '\ud800x'],
  ])('encodes %s without braces or colons', (_label, value) => {
    const out = encodeKeyComponent(value);
    expect(out).not.toMatch(/[{}:]/);
    expect(out).not.toContain(value === '' ? '\u0000' : value);
  });

  it('hashes very long values to a fixed length', () => {
    const long = `{${'x'.repeat(10 * 1024)}}`;
    const out = encodeKeyComponent(long);
    expect(out).toMatch(/^#[A-Za-z0-9_-]{43}$/);
    expect(encodeKeyComponent(`${long}y`)).not.toBe(out);
    expect(encodeKeyComponent('a'.repeat(65))).toMatch(/^~/);
    expect(encodeKeyComponent('a'.repeat(97))).toMatch(/^#/);
  });

  it('keeps the three UTF-16 spellings of a broken surrogate apart', () => {
    const values = ['\ud800', '\udc00', '\ufffd'];
    expect(new Set(values.map(encodeKeyComponent)).size).toBe(3);
  });

  it('distinct values give distinct components (property)', () => {
    const value = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 40 }),
      fc.string({ unit: 'grapheme', maxLength: 40 }),
      fc.stringMatching(/^[A-Za-z0-9._@:{}-]{0,70}$/),
      fc.string({ minLength: 90, maxLength: 140 }),
    );
    fc.assert(
      fc.property(value, value, (a, b) => {
        fc.pre(a !== b);
        expect(encodeKeyComponent(a)).not.toBe(encodeKeyComponent(b));
      }),
      { numRuns: 2000 },
    );
  });
});

describe('buildKey', () => {
  it('lays keys out as <prefix>:{<identity>}:<policy>', () => {
    expect(buildKey('sluice', 'tenant-1', burst)).toBe('sluice:{app=tenant-1}:burst');
    expect(buildKey('sluice', 'tenant-1', perRoute, 'POST /transfers/:id')).toBe(
      `sluice:{app=tenant-1}:per-route:~${Buffer.from('POST /transfers/:id').toString('base64url')}`,
    );
    expect(buildKey('sluice', 'tenant-1', perRoute)).toBe('sluice:{app=tenant-1}:per-route:-');
  });

  it('puts each identity kind in its own namespace', () => {
    expect(buildKey('sluice', { kind: 'ip', value: '127.0.0.1' }, burst)).toBe('sluice:{ip=127.0.0.1}:burst');
    expect(buildKey('sluice', { kind: 'key', value: '127.0.0.1' }, burst)).toBe(
      'sluice:{key=127.0.0.1}:burst',
    );
    expect(buildKey('sluice', { kind: 'app', value: '127.0.0.1' }, burst)).toBe(
      'sluice:{app=127.0.0.1}:burst',
    );
    expect(buildKey('sluice', '127.0.0.1', burst)).toBe('sluice:{app=127.0.0.1}:burst');
  });

  it('two identities share a key exactly when kind and value are equal (property)', () => {
    const kind = fc.constantFrom<IdentityKind>('ip', 'key', 'app');
    const value = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 30 }),
      fc.constantFrom('', '127.0.0.1', 'ip=127.0.0.1', 'key', '=x', '~', 'app', '2001:db8::/56'),
      fc.stringMatching(/^[a-z=~#!.:{}-]{0,12}$/),
    );
    fc.assert(
      fc.property(kind, value, kind, value, (ka, va, kb, vb) => {
        const same =
          buildKey('sluice', { kind: ka, value: va }, burst) ===
          buildKey('sluice', { kind: kb, value: vb }, burst);
        expect(same).toBe(ka === kb && va === vb);
      }),
      { numRuns: 3000 },
    );
  });

  it('validates prefixes', () => {
    expect(isValidPrefix('sluice')).toBe(true);
    expect(isValidPrefix('app:v2')).toBe(true);
    expect(isValidPrefix('')).toBe(false);
    expect(isValidPrefix('a{b')).toBe(false);
    expect(isValidPrefix('a b')).toBe(false);
    expect(isValidPrefix(5)).toBe(false);
  });

  it('a client cannot choose the slot, and all keys of one request share it (property)', () => {
    const identity = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 50 }),
      fc.stringMatching(/^[{}:a-z]{0,20}$/),
      fc.constantFrom('', '{}', '{', '}', '}{', '{x}', 'a:{b}:c', 'x'.repeat(10 * 1024)),
    );
    const route = fc.option(fc.string({ unit: 'binary', maxLength: 30 }), { nil: undefined });
    fc.assert(
      fc.property(identity, route, (id, r) => {
        const tag = identityTag('sluice', id);
        const keys = [burst, transfers, perRoute].map((p) => policyKey(tag, p, r));
        const tags = keys.map(hashTag);
        const encoded = `app${encodeKeyComponent(id)}`;
        for (const t of tags) {
          expect(t).toBe(encoded);
          expect(t).not.toMatch(/[{}]/);
        }
        expect(new Set(keys.map((k) => calculateSlot(k))).size).toBe(1);
        expect(calculateSlot(keys[0]!)).toBe(calculateSlot(encoded));
      }),
      { numRuns: 1000 },
    );
  });

  it('distinct identities or routes give distinct keys (property)', () => {
    const text = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 30 }),
      fc.stringMatching(/^[{}:=~#!-]{0,8}$/),
    );
    fc.assert(
      fc.property(
        text,
        text,
        fc.option(text, { nil: undefined }),
        fc.option(text, { nil: undefined }),
        (a, b, ra, rb) => {
          fc.pre(a !== b || ra !== rb);
          const all = [burst, transfers, perRoute];
          const left = all.map((p) => buildKey('sluice', a, p, ra));
          const right = all.map((p) => buildKey('sluice', b, p, rb));
          // Identity-scoped keys differ exactly when identities differ; route keys when either differs.
          expect(left[0] === right[0]).toBe(a === b);
          expect(left[2] === right[2]).toBe(false);
          expect(new Set(left).size).toBe(3);
        },
      ),
      { numRuns: 2000 },
    );
  });
});

describe('requestKey', () => {
  const tagA = identityTag('sluice', { kind: 'key', value: 'a' });
  const tagB = identityTag('sluice', { kind: 'key', value: 'b' });
  const keysOf = (tag: string, ...policies: (typeof burst)[]) =>
    policies.map((p) => policyKey(tag, p, 'GET /x'));

  it('lives in the identity slot and never meets a policy key', () => {
    const record = requestKey(tagA, 'req-1', keysOf(tagA, burst));
    expect(record.startsWith(`${tagA}:~rid:`)).toBe(true);
    expect(hashTag(record)).toBe(hashTag(tagA));
  });

  it('differs for another identity, another policy set or another route of a route-scoped policy', () => {
    const base = requestKey(tagA, 'req-1', keysOf(tagA, burst, transfers));
    expect(requestKey(tagA, 'req-1', keysOf(tagA, burst, transfers))).toBe(base);
    expect(requestKey(tagB, 'req-1', keysOf(tagB, burst, transfers))).not.toBe(base);
    expect(requestKey(tagA, 'req-1', keysOf(tagA, burst))).not.toBe(base);
    expect(requestKey(tagA, 'req-1', keysOf(tagA, transfers))).not.toBe(base);
    expect(requestKey(tagA, 'req-2', keysOf(tagA, burst, transfers))).not.toBe(base);
    const routed = (route: string) => requestKey(tagA, 'req-1', [policyKey(tagA, perRoute, route)]);
    expect(routed('GET /a')).not.toBe(routed('GET /b'));
  });
});
