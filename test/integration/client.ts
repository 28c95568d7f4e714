/**
 * A small HTTP client for the integration suites: node:http to 127.0.0.1 with timings, through
 * one keep-alive pool per origin (at most MAX_SOCKETS_PER_ORIGIN connections), as a real client
 * or load balancer would: a burst of 1,000 requests is issued at once and queues in the pool.
 */
import { Agent, request as httpRequest } from 'node:http';

/** Connections per origin. */
export const MAX_SOCKETS_PER_ORIGIN = 25;

const agents = new Map<string, Agent>();

function agentFor(origin: string): Agent {
  let agent = agents.get(origin);
  if (agent === undefined) {
    agent = new Agent({ keepAlive: true, maxSockets: MAX_SOCKETS_PER_ORIGIN });
    agents.set(origin, agent);
  }
  return agent;
}

/** Closes every pooled connection. */
export function closeAgents(): void {
  for (const agent of agents.values()) agent.destroy();
  agents.clear();
}

/** One response, read in full. */
export interface Reply {
  readonly status: number;
  /** Header names in lower case; repeated headers joined with `, `. */
  readonly headers: Readonly<Record<string, string>>;
  readonly text: string;
  /** Milliseconds from sending to having the whole body. */
  readonly elapsedMs: number;
  /** The URL that answered. */
  readonly url: string;
}

/**
 * Sends one request and reads the whole response. A request that fails on a reused keep-alive
 * connection the server closed at the same moment (ECONNRESET / socket hang up before any
 * response) never reached the app, so it is sent again once on a new connection, as Node's
 * documentation advises for `request.reusedSocket`.
 */
export async function request(
  url: string,
  init: { method?: string; headers?: Record<string, string> } = {},
): Promise<Reply> {
  try {
    return await send(url, init, true);
  } catch (error) {
    if ((error as { retryable?: boolean }).retryable) return send(url, init, false);
    throw error;
  }
}

function send(url: string, init: { method?: string; headers?: Record<string, string> }, mayRetry: boolean) {
  const started = performance.now();
  const target = new URL(url);
  return new Promise<Reply>((resolve, reject) => {
    const req = httpRequest(
      target,
      { method: init.method ?? 'GET', headers: init.headers, agent: agentFor(target.origin) },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const headers: Record<string, string> = {};
          for (const [name, value] of Object.entries(res.headers)) {
            if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
          }
          resolve({
            status: res.statusCode ?? 0,
            headers,
            text: Buffer.concat(chunks).toString('utf8'),
            elapsedMs: performance.now() - started,
            url,
          });
        });
      },
    );
    req.on('error', (error: NodeJS.ErrnoException) => {
      const closedUnderUs = error.code === 'ECONNRESET' || error.message === 'socket hang up';
      if (mayRetry && req.reusedSocket && closedUnderUs) Object.assign(error, { retryable: true });
      reject(error);
    });
    req.end();
  });
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

/** A request on a connection of its own, which the test may abort (the client goes away). */
export interface OpenRequest {
  /** The response read in full; rejects once aborted. */
  readonly reply: Promise<Reply>;
  /** Destroys the connection: the server sees its client go away. */
  abort(): void;
}

/** Sends one GET on a new connection (no pool) that `abort()` destroys. */
export function openRequest(url: string, headers: Record<string, string> = {}): OpenRequest {
  const started = performance.now();
  const req = httpRequest(new URL(url), { headers, agent: false });
  const reply = new Promise<Reply>((resolve, reject) => {
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers as Record<string, string>,
          text: Buffer.concat(chunks).toString('utf8'),
          elapsedMs: performance.now() - started,
          url,
        }),
      );
    });
    req.on('error', reject);
  });
  // An aborted request's rejection is expected: whoever awaits `reply` still sees it.
  reply.catch(() => undefined);
  req.end();
  return { reply, abort: () => req.destroy() };
}
