/** A small HTTP client for the integration suites: fetch to 127.0.0.1 with timings. */

/** One response, read in full. */
export interface Reply {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly text: string;
  /** Milliseconds from sending to having the whole body. */
  readonly elapsedMs: number;
  /** The URL that answered. */
  readonly url: string;
}

/** Sends one request and reads the whole response. */
export async function request(
  url: string,
  init: { method?: string; headers?: Record<string, string> } = {},
): Promise<Reply> {
  const started = performance.now();
  const response = await fetch(url, { method: init.method ?? 'GET', headers: init.headers });
  const text = await response.text();
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  return { status: response.status, headers, text, elapsedMs: performance.now() - started, url };
}

/** Parses a JSON body, with the body in the error when it is not JSON. */
export function json(reply: Reply): unknown {
  try {
    return JSON.parse(reply.text);
  } catch {
    throw new Error(`${reply.url} answered ${reply.status} with a body that is not JSON: ${reply.text}`);
  }
}

/** `r` of one member of a draft-10 `RateLimit` header, e.g. `"payments";r=5;t=1`. */
export function remainingOf(rateLimitHeader: string | undefined, policy: string): number | undefined {
  if (rateLimitHeader === undefined) return undefined;
  const member = rateLimitHeader
    .split(',')
    .map((part) => part.trim())
    .find((part) => part.startsWith(`"${policy}";`));
  const match = member?.match(/;r=(\d+)/);
  return match ? Number(match[1]) : undefined;
}

/** Sums the samples of one Prometheus counter whose labels include all of `labels`. */
export function counterValue(metricsText: string, name: string, labels: Record<string, string>): number {
  let total = 0;
  for (const line of metricsText.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const labelText = line.slice(name.length + 1, line.indexOf('}'));
    const matches = Object.entries(labels).every(([key, value]) => labelText.includes(`${key}="${value}"`));
    if (matches) total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}
