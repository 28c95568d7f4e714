import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isIdSegment, normalizePath, routeKey, UNMATCHED_ROUTE } from './route.js';

describe('normalizePath', () => {
  it.each([
    ['/users/42', '/users/:id'],
    ['/transfers/42/status', '/transfers/:id/status'],
    ['/orders/3f2504e0-4f89-11d3-9a0c-0305e82c3301', '/orders/:id'],
    ['/orders/3F2504E0-4F89-11D3-9A0C-0305E82C3301/items/7', '/orders/:id/items/:id'],
    ['/blobs/deadbeefdeadbeef', '/blobs/:id'],
    ['/commits/5d41402abc4b2a76b9719d911017c592', '/commits/:id'],
    ['/tokens/dXNlcjoxMjM0NTY3ODkwYWJj', '/tokens/:id'],
    ['/objects/01ARZ3NDEKTSV4RRFFQ69G5FAV', '/objects/:id'],
    ['/users/usr_2f9Kx8QmZ71LpA3b', '/users/:id'],
    ['/people/jane@example.com', '/people/:id'],
    ['/invoices/inv-2024-000123', '/invoices/:id'],
    ['/n/12345678901234567890', '/n/:id'],
    ['/n/-12.5', '/n/:id'],
    [`/x/${'a'.repeat(65)}`, '/x/:id'],
  ])('%s -> %s', (input, expected) => {
    expect(normalizePath(input)).toBe(expected);
  });

  it('drops the query string and fragment', () => {
    expect(normalizePath('/limited?apiKey=secret&x=1')).toBe('/limited');
    expect(normalizePath('/limited#frag')).toBe('/limited');
    expect(normalizePath('/a/b?x=/c#d')).toBe('/a/b');
  });

  it('collapses duplicate and trailing slashes', () => {
    expect(normalizePath('//a///b/')).toBe('/a/b');
    expect(normalizePath('/')).toBe('/');
    expect(normalizePath('')).toBe('/');
    expect(normalizePath('?q=1')).toBe('/');
  });

  it('resolves dot segments and escaped unreserved characters, and folds case', () => {
    expect(normalizePath('/a/./b/../limited')).toBe('/a/limited');
    expect(normalizePath('/../../limited')).toBe('/limited');
    expect(normalizePath('/limite%64')).toBe('/limited');
    expect(normalizePath('/LIMITED')).toBe('/limited');
    expect(normalizePath('/a%2Fb')).toBe('/a%2fb');
  });

  it('drops the origin of an absolute URL', () => {
    expect(normalizePath('https://api.example/users/1?x=2')).toBe('/users/:id');
  });

  it('keeps words', () => {
    expect(normalizePath('/api/v1/health')).toBe('/api/v1/health');
    expect(normalizePath('/transfers/status')).toBe('/transfers/status');
    expect(normalizePath('/authentication-tokens')).toBe('/authentication-tokens');
    expect(normalizePath('/oauth2/callback')).toBe('/oauth2/callback');
  });

  it('bounds the number of segments', () => {
    const deep = `/${Array.from({ length: 50 }, (_, i) => `s${String.fromCharCode(97 + (i % 26))}`).join('/')}`;
    const out = normalizePath(deep).split('/');
    expect(out.length).toBe(34);
    expect(out.at(-1)).toBe(':rest');
  });

  it('never keeps a query string, a digit run of 6+ or an @, and is idempotent', () => {
    fc.assert(
      fc.property(fc.webUrl({ withQueryParameters: true, withFragments: true }), (url) => {
        const p = normalizePath(url);
        expect(p.startsWith('/')).toBe(true);
        expect(p).not.toMatch(/[?#@]/);
        expect(p).not.toMatch(/\/\//);
        expect(p).not.toMatch(/[0-9]{6}/);
        expect(normalizePath(p)).toBe(p);
      }),
    );
  });

  it('folds every UUID and every integer', () => {
    fc.assert(
      fc.property(fc.uuid(), fc.nat(), (uuid, n) => {
        expect(normalizePath(`/a/${uuid}/b/${n}`)).toBe('/a/:id/b/:id');
      }),
    );
  });
});

describe('isIdSegment', () => {
  it('tells ids from words', () => {
    expect(isIdSegment('42')).toBe(true);
    expect(isIdSegment('users')).toBe(false);
    expect(isIdSegment('v2')).toBe(false);
  });
});

describe('routeKey', () => {
  it('joins the upper-cased method and the pattern', () => {
    expect(routeKey('post', '/transfers/:id', '/transfers/42')).toBe('POST /transfers/:id');
  });

  it('is one key for every request whose pattern is unknown: no path text, no key per path', () => {
    expect(routeKey('GET', undefined, '/transfers/42/status?x=1')).toBe(UNMATCHED_ROUTE);
    expect(routeKey('POST', undefined, '/wp-admin/setup')).toBe(UNMATCHED_ROUTE);
    const keys = new Set<string>();
    fc.assert(
      fc.property(fc.string(), fc.webPath(), (method, path) => {
        keys.add(routeKey(method, undefined, path));
      }),
      { numRuns: 10_000 },
    );
    expect([...keys]).toEqual([UNMATCHED_ROUTE]);
  });

  it('treats an empty pattern as the root', () => {
    expect(routeKey('GET', '', '/anything')).toBe('GET /');
  });

  it('maps invented methods to OTHER', () => {
    expect(routeKey('GET /x', '/', '/')).toBe('OTHER /');
    expect(routeKey('X'.repeat(40), '/', '/')).toBe('OTHER /');
    expect(routeKey('m-search', '/', '/')).toBe('M-SEARCH /');
  });
});
