/**
 * Parsers for the headers proxies use to pass on the client address: `X-Forwarded-For`
 * and RFC 7239 `Forwarded`. Both return the hop addresses in header order (client first,
 * nearest proxy last), exactly as written: validation happens in `clientIp`.
 */

/** Drops a port from one hop: `1.2.3.4:80` -> `1.2.3.4`, `[::1]:80` -> `::1`; IPv6 stays whole. */
export function stripPort(hop: string): string {
  const value = hop.trim();
  if (value.startsWith('[')) {
    const end = value.indexOf(']');
    return end === -1 ? value : value.slice(1, end);
  }
  const colon = value.indexOf(':');
  // One colon: IPv4 (or a name) with a port. More: a bare IPv6 address.
  if (colon !== -1 && colon === value.lastIndexOf(':')) return value.slice(0, colon);
  return value;
}

/**
 * Parses `X-Forwarded-For: client, proxy1, proxy2` into `['client', 'proxy1', 'proxy2']`,
 * ports removed. Empty members are kept as `''` so that they count as (invalid) hops.
 */
export function parseXForwardedFor(value: string): string[] {
  if (value.trim() === '') return [];
  return value.split(',').map(stripPort);
}

/** Reads one `for=` value: a token or a quoted string with `\` escapes. */
function unquote(value: string): string {
  const v = value.trim();
  if (!v.startsWith('"')) return v;
  let out = '';
  for (let i = 1; i < v.length; i++) {
    const c = v[i]!;
    if (c === '\\') {
      i++;
      out += v[i] ?? '';
    } else if (c === '"') {
      break;
    } else {
      out += c;
    }
  }
  return out;
}

/** Splits on `sep` outside double quotes. */
function splitOutsideQuotes(value: string, sep: string): string[] {
  const parts: string[] = [];
  let current = '';
  let quoted = false;
  for (let i = 0; i < value.length; i++) {
    const c = value[i]!;
    if (quoted && c === '\\') {
      current += c + (value[i + 1] ?? '');
      i++;
      continue;
    }
    if (c === '"') quoted = !quoted;
    if (c === sep && !quoted) {
      parts.push(current);
      current = '';
    } else {
      current += c;
    }
  }
  parts.push(current);
  return parts;
}

/**
 * Parses RFC 7239 `Forwarded: for=192.0.2.60;proto=http, for="[2001:db8::1]:4711"` into
 * the `for=` node of each element (`['192.0.2.60', '2001:db8::1']`), ports removed.
 * An element without `for=` yields `''`; `unknown` and obfuscated identifiers (`_hidden`)
 * are returned as written, and are not IP addresses.
 */
export function parseForwarded(value: string): string[] {
  if (value.trim() === '') return [];
  return splitOutsideQuotes(value, ',').map((element) => {
    for (const pair of splitOutsideQuotes(element, ';')) {
      const eq = pair.indexOf('=');
      if (eq === -1) continue;
      if (pair.slice(0, eq).trim().toLowerCase() === 'for') return stripPort(unquote(pair.slice(eq + 1)));
    }
    return '';
  });
}
