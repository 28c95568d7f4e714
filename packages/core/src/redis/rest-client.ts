/**
 * Redis over HTTP for edge runtimes: an `EvalClient` speaking the Upstash REST protocol
 * with `fetch`, and an adapter for an `@upstash/redis` client instance.
 * Web standards only: no `node:` imports, no Buffer, no process.
 */

import { REST_REDIS_ERROR_BRAND } from '../error-brands.js';
import type { EvalClient } from '../types.js';

/** The `fetch` signature the REST client calls; defaults to the global `fetch`. */
export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

/** How the server encodes string results (the `Upstash-Encoding` request header). */
export type RestResponseEncoding = 'base64' | 'none';

/** Options of {@link createRestEvalClient}. */
export interface RestEvalClientOptions {
  /** The REST endpoint, e.g. `https://example.upstash.io` (Upstash's `UPSTASH_REDIS_REST_URL`). */
  readonly url: string;
  /** The REST token, sent as `Authorization: Bearer <token>` (`UPSTASH_REDIS_REST_TOKEN`). */
  readonly token: string;
  /** A `fetch` to use instead of the global one (tests, proxies, instrumented fetches). */
  readonly fetch?: FetchLike;
  /**
   * `'base64'` (default, as `@upstash/redis` does) asks the server to base64-encode string
   * results so every byte survives JSON; `'none'` takes strings as the JSON carries them.
   */
  readonly responseEncoding?: RestResponseEncoding;
}

/**
 * A command the REST server refused or could not run. The message is the server's error
 * (a Redis error such as `NOSCRIPT No matching script...` keeps its leading code) or a
 * description of the HTTP failure; it never holds the token, the keys or the arguments.
 */
export class RestRedisError extends Error {
  /** The brand `isRestRedisError` reads: it holds across copies of the package, `instanceof` does not. */
  get [REST_REDIS_ERROR_BRAND](): true {
    return true;
  }

  /** The HTTP status of the reply, when one arrived. */
  readonly status: number | undefined;

  /** @param message what failed; @param status the HTTP status, when known */
  constructor(message: string, status?: number) {
    super(message);
    this.name = 'RestRedisError';
    this.status = status;
  }
}

/**
 * Turn a server or client error text into a message that starts with the Redis error code
 * when it carries NOSCRIPT (so a store's EVALSHA -> EVAL fallback recognizes it), and that
 * carries nothing after the first line or after a `command was:` echo of the arguments.
 */
export function sanitizeRedisErrorMessage(raw: string): string {
  let message = raw.split('\n', 1)[0] ?? '';
  const echo = message.search(/,?\s*command was:/i);
  if (echo >= 0) message = message.slice(0, echo);
  const noscript = message.search(/NOSCRIPT/i);
  if (noscript > 0) message = message.slice(noscript);
  if (noscript >= 0 && !message.startsWith('NOSCRIPT'))
    message = `NOSCRIPT${message.slice('NOSCRIPT'.length)}`;
  return message.trim() === '' ? 'Redis command failed' : message.trim();
}

function base64ToText(encoded: string): string {
  let binary: string;
  try {
    binary = atob(encoded);
  } catch {
    return encoded;
  }
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return new TextDecoder().decode(bytes);
}

/**
 * Decode a result sent with `Upstash-Encoding: base64`: every string is base64 except the
 * status reply `OK` (which is never valid base64, so the two cannot be confused).
 */
export function decodeBase64Result(value: unknown): unknown {
  if (typeof value === 'string') return value === 'OK' ? value : base64ToText(value);
  if (Array.isArray(value)) return value.map(decodeBase64Result);
  return value;
}

function requireNonEmptyString(value: unknown, field: string, caller: string): string {
  if (typeof value !== 'string' || value === '') {
    throw new TypeError(
      `${caller}: "${field}" must be a non-empty string, got ${value === '' ? 'an empty string' : typeof value}`,
    );
  }
  return value;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** One Redis command sent over REST: its parts in order, e.g. `['EVALSHA', sha1, 1, key, arg]`. */
export type RestCommand = (parts: readonly (string | number)[]) => Promise<unknown>;

/**
 * The REST command sender behind {@link createRestEvalClient} and the REST transport: checks
 * `options` (errors name `caller`), then sends each command as one JSON array (`POST <url>`),
 * reads `{ "result": ... }` or `{ "error": "..." }`, and throws a {@link RestRedisError} for
 * errors (a missing script as a message that starts with `NOSCRIPT`).
 */
export function createRestCommand(options: RestEvalClientOptions, caller: string): RestCommand {
  if (!isRecord(options)) throw new TypeError(`${caller}: options must be an object with "url" and "token"`);
  const url = requireNonEmptyString(options.url, 'url', caller);
  const token = requireNonEmptyString(options.token, 'token', caller);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new TypeError(`${caller}: "url" must be an absolute http(s) URL, got "${url}"`);
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
    throw new TypeError(`${caller}: "url" must be an absolute http(s) URL, got "${url}"`);
  }
  if (options.fetch !== undefined && typeof options.fetch !== 'function') {
    throw new TypeError(`${caller}: "fetch" must be a function, got ${typeof options.fetch}`);
  }
  const encoding = options.responseEncoding ?? 'base64';
  if (encoding !== 'base64' && encoding !== 'none') {
    throw new TypeError(
      `${caller}: "responseEncoding" must be 'base64' or 'none', got "${String(encoding)}"`,
    );
  }
  // Called through a closure: workerd rejects a detached `fetch` ("Illegal invocation").
  const fetchFn: FetchLike = options.fetch ?? ((input, init) => fetch(input, init));
  const headers: Record<string, string> = {
    Authorization: `Bearer ${token}`,
    'Content-Type': 'application/json',
  };
  if (encoding === 'base64') headers['Upstash-Encoding'] = 'base64';

  return async function command(parts) {
    const response = await fetchFn(url, {
      method: 'POST',
      headers,
      body: JSON.stringify(parts.map(String)),
    });
    const text = await response.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new RestRedisError(
        `Redis REST request failed: HTTP ${response.status} with a non-JSON body`,
        response.status,
      );
    }
    if (isRecord(body) && typeof body.error === 'string') {
      throw new RestRedisError(sanitizeRedisErrorMessage(body.error), response.status);
    }
    if (!response.ok)
      throw new RestRedisError(`Redis REST request failed: HTTP ${response.status}`, response.status);
    if (!isRecord(body) || !('result' in body)) {
      throw new RestRedisError(
        'Redis REST request failed: the reply has neither "result" nor "error"',
        response.status,
      );
    }
    return encoding === 'base64' ? decodeBase64Result(body.result) : body.result;
  };
}

/**
 * Build an `EvalClient` that sends each command as one JSON array to an Upstash-compatible
 * REST endpoint (`POST <url>` with body `["EVALSHA", sha1, numKeys, ...keys, ...args]`),
 * reads `{ "result": ... }` or `{ "error": "..." }`, and throws a {@link RestRedisError}
 * for errors. A missing script surfaces as an error whose message starts with `NOSCRIPT`,
 * so `RedisStore` falls back to EVAL.
 *
 * @example
 * const store = new RedisStore({
 *   client: createRestEvalClient({ url: env.UPSTASH_REDIS_REST_URL, token: env.UPSTASH_REDIS_REST_TOKEN }),
 * });
 */
export function createRestEvalClient(options: RestEvalClientOptions): EvalClient {
  const command = createRestCommand(options, 'createRestEvalClient');
  return {
    evalsha: (sha1, numKeys, ...args) => command(['EVALSHA', sha1, numKeys, ...args]),
    eval: (script, numKeys, ...args) => command(['EVAL', script, numKeys, ...args]),
  };
}

/**
 * The two methods of an `@upstash/redis` `Redis` instance that Sluice calls, as a structural
 * type so core does not depend on the package.
 */
export interface UpstashRedisLike {
  evalsha(sha1: string, keys: string[], args: unknown[]): Promise<unknown>;
  eval(script: string, keys: string[], args: unknown[]): Promise<unknown>;
}

function rethrowSanitized(error: unknown): never {
  const raw = error instanceof Error ? error.message : String(error);
  throw new RestRedisError(sanitizeRedisErrorMessage(raw));
}

/**
 * Adapt an `@upstash/redis` client (`new Redis({ url, token })`) into an `EvalClient`:
 * the first `numKeys` arguments become `keys`, the rest `args`. Errors are re-thrown as
 * {@link RestRedisError} with a message that starts with `NOSCRIPT` for a missing script and
 * never echoes the command (keys hold identities).
 *
 * Create the client with `automaticDeserialization: false` so replies reach the script decoder
 * exactly as Redis sent them.
 *
 * @example
 * import { Redis } from '@upstash/redis';
 * const client = fromUpstashRedis(new Redis({ url, token, automaticDeserialization: false }));
 */
export function fromUpstashRedis(redis: UpstashRedisLike): EvalClient {
  if (!isRecord(redis) || typeof redis.evalsha !== 'function' || typeof redis.eval !== 'function') {
    throw new TypeError(
      'fromUpstashRedis: "redis" must be an @upstash/redis client with evalsha() and eval()',
    );
  }
  const split = (numKeys: number, args: (string | number)[]): [string[], string[]] => [
    args.slice(0, numKeys).map(String),
    args.slice(numKeys).map(String),
  ];
  return {
    async evalsha(sha1, numKeys, ...args) {
      const [keys, rest] = split(numKeys, args);
      try {
        return await redis.evalsha(sha1, keys, rest);
      } catch (error) {
        rethrowSanitized(error);
      }
    },
    async eval(script, numKeys, ...args) {
      const [keys, rest] = split(numKeys, args);
      try {
        return await redis.eval(script, keys, rest);
      } catch (error) {
        rethrowSanitized(error);
      }
    },
  };
}
