/**
 * Route keys: the method and the matched route pattern (`POST /transfers/:id`), never the
 * raw URL; one key, `UNMATCHED_ROUTE`, for every request whose pattern is unknown.
 * `normalizePath` folds the parts of a path that identify things (ids, UUIDs, hashes, tokens,
 * e-mail addresses) to `:id`, for adapters that turn a mount path into part of a pattern.
 */

/** Most path segments kept; deeper paths end in `/:rest`. */
export const MAX_ROUTE_SEGMENTS = 32;

/** Segments longer than this are folded whatever they hold. */
const MAX_SEGMENT_LENGTH = 64;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const HEX = /^[0-9a-f]{16,}$/i;
const DIGITS = /^[0-9]+$/;
/** Numbers with separators or a sign: `-12`, `12.5`, `1,000`. */
const NUMBER = /^[-+]?[0-9][0-9.,_]*$/;
/** Token alphabet: base64, base64url, ULID, nanoid. */
const TOKEN = /^[A-Za-z0-9_\-+=~.]+$/;
const UNRESERVED = /[A-Za-z0-9\-._~]/;

/**
 * True when a path segment names one thing rather than a kind of thing: a number, a UUID,
 * 16 or more hex digits, a token of 16 or more characters that mixes letters and digits
 * (base64, ULID, nanoid, prefixed ids like `usr_2f9Kx...`), anything with `@`, or any
 * segment over 64 characters.
 */
export function isIdSegment(segment: string): boolean {
  if (segment.length > MAX_SEGMENT_LENGTH) return true;
  if (DIGITS.test(segment) || NUMBER.test(segment)) return true;
  if (UUID.test(segment) || HEX.test(segment)) return true;
  if (segment.includes('@')) return true;
  if (segment.length >= 16 && TOKEN.test(segment) && /[0-9]/.test(segment) && /[A-Za-z]/.test(segment)) {
    return true;
  }
  // Mostly digits: `inv-2024-000123`, `a1b2c3d4e5`.
  const digits = segment.replace(/[^0-9]/g, '').length;
  return segment.length >= 6 && digits * 2 >= segment.length;
}

/** Decodes `%XX` escapes of unreserved characters (`%7E` -> `~`); other escapes stay, upper-cased. */
function decodeUnreserved(segment: string): string {
  return segment.replace(/%([0-9A-Fa-f]{2})/g, (match, hex: string) => {
    const c = String.fromCharCode(Number.parseInt(hex, 16));
    return UNRESERVED.test(c) ? c : match.toUpperCase();
  });
}

/**
 * Normalizes a request path for use in a route key when no route pattern is known:
 * - drops the query string and fragment (and the origin of an absolute URL);
 * - collapses repeated slashes and drops a trailing slash;
 * - resolves `.` and `..` segments and decodes escaped unreserved characters;
 * - lower-cases what is kept (most frameworks match routes case-insensitively, so
 *   `/Limited` and `/limited` must share a key);
 * - folds id-like segments (see `isIdSegment`) to `:id`;
 * - keeps at most 32 segments (`/:rest` marks the cut).
 *
 * @example normalizePath('/users/42/orders/3f2504e0-4f89-11d3-9a0c-0305e82c3301?x=1') // '/users/:id/orders/:id'
 */
export function normalizePath(path: string): string {
  let p = typeof path === 'string' ? path : '';
  const cut = p.search(/[?#]/);
  if (cut !== -1) p = p.slice(0, cut);
  const origin = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/]*/.exec(p);
  if (origin !== null) p = p.slice(origin[0].length);

  const segments: string[] = [];
  for (const raw of p.split('/')) {
    if (raw === '' || raw === '.') continue;
    const segment = decodeUnreserved(raw);
    if (segment === '.') continue;
    if (segment === '..') {
      segments.pop();
      continue;
    }
    segments.push(isIdSegment(segment) ? ':id' : segment.toLowerCase());
  }
  if (segments.length > MAX_ROUTE_SEGMENTS) {
    segments.length = MAX_ROUTE_SEGMENTS;
    segments.push(':rest');
  }
  return `/${segments.join('/')}`;
}

const METHOD = /^[A-Z][A-Z-]{0,19}$/;

/**
 * The route key of every request whose route pattern is unknown (app-wide middleware that runs
 * before the framework matched a route, a 404): one bucket, whatever the method and path.
 */
export const UNMATCHED_ROUTE = '(unmatched)';

/**
 * The route key of a request: upper-cased method, a space, then the framework's matched
 * pattern (an empty pattern is `/`). A method that is not a plain token of up to 20 letters
 * becomes `OTHER`. Without a pattern the key is `UNMATCHED_ROUTE`: the path is the client's text,
 * and keying on it (even folded) would let a client write its own text into the store and mint
 * a key per distinct path, so the raw path never reaches a key.
 *
 * @example routeKey('post', '/transfers/:id', '/transfers/42') // 'POST /transfers/:id'
 * @example routeKey('GET', undefined, '/wp-admin/x') // '(unmatched)'
 */
export function routeKey(method: string, pattern: string | undefined, _path: string): string {
  if (pattern === undefined) return UNMATCHED_ROUTE;
  const upper = typeof method === 'string' ? method.toUpperCase() : '';
  const m = METHOD.test(upper) ? upper : 'OTHER';
  return `${m} ${pattern === '' ? '/' : pattern}`;
}
