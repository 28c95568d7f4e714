/** `rateLimit()`: Hono middleware that asks Sluice core for a decision and applies it. */
import {
  ADAPTER_OPTION_NAMES,
  createRateLimitHandler,
  type Decision,
  type HttpVerdict,
  problemJson,
  type RateLimitHandler,
  type RateLimitOptions,
  RateLimitOptionsError,
} from '@sluice/core';
import type { Context, Env, MiddlewareHandler } from 'hono';
import { matchedPattern } from './route-pattern.js';

/** The context variables `rateLimit()` sets: `c.get('rateLimit')` is this request's decision. */
export interface RateLimitVariables {
  /** The Sluice decision for this request; unset when the request was skipped. */
  rateLimit?: Decision;
}

/** Hono `Env` fragment to merge into an app's own: `new Hono<RateLimitEnv>()`. */
export interface RateLimitEnv {
  Variables: RateLimitVariables;
}

/**
 * Replaces the default 429/503 response. Called with the verdict (status, headers, problem
 * body) after `c.get('rateLimit')` is set; the rate-limit headers are already on the context
 * (`c.header`), so a response built with `c.json()` / `c.body()` carries them.
 */
export type OnLimited<E extends Env = Env> = (
  c: Context<E>,
  verdict: HttpVerdict,
) => Response | Promise<Response>;

/** Options of the Hono middleware: core's shared options plus the Hono-specific ones. */
export interface HonoRateLimitOptions<E extends Env = Env> extends RateLimitOptions<Context<E>> {
  /**
   * Name of a request header that carries the identity (e.g. `'x-api-key'`), as an identity
   * of kind `key`: never the same bucket as a client address or an `identity` string of the
   * same spelling. Used when `identity` is not given; a request without the header falls back
   * to `clientIp`. Any client can send any header: use it only behind something that has
   * authenticated the value (a gateway that verifies API keys, an auth middleware that runs
   * first), or verify the key yourself and return `{ kind: 'key', value }` from `identity`.
   */
  identityHeader?: string;
  /**
   * The client address, the identity when neither `identity` nor `identityHeader` gives one.
   * Hono has no portable client address: on Node use `getConnInfo` from
   * `@hono/node-server/conninfo`, on Cloudflare `c.req.header('cf-connecting-ip')`, on
   * Deno and Bun their `getConnInfo` helpers. Core groups IPv6 addresses by prefix.
   */
  clientIp?: (c: Context<E>) => string | undefined;
  /** Replace the default problem+json response for denied (429) and unavailable (503) requests. */
  onLimited?: OnLimited<E>;
}

/**
 * Builds the options from the first request's context, for options that need the
 * runtime's bindings (`c.env` on Cloudflare Workers: a REST Redis URL and token). Called
 * once; the limiter and store it builds then serve every request. May be async.
 */
export type HonoRateLimitOptionsFactory<E extends Env = Env> = (
  c: Context<E>,
) => HonoRateLimitOptions<E> | Promise<HonoRateLimitOptions<E>>;

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** The part of a Node `http.ServerResponse` the Node path uses. */
interface NodeResponse {
  readonly headersSent: boolean;
  setHeader(name: string, value: string): unknown;
  writeHead(...args: never[]): unknown;
}

/**
 * The Node response @hono/node-server puts in `c.env.outgoing`, while its headers are
 * still unsent; undefined on every other runtime (and in `app.request()`).
 */
function nodeResponse(env: unknown): NodeResponse | undefined {
  if (typeof env !== 'object' || env === null) return undefined;
  const outgoing = (env as { outgoing?: Partial<NodeResponse> }).outgoing;
  if (
    typeof outgoing !== 'object' ||
    outgoing === null ||
    typeof outgoing.setHeader !== 'function' ||
    typeof outgoing.writeHead !== 'function' ||
    outgoing.headersSent !== false
  ) {
    return undefined;
  }
  return outgoing as NodeResponse;
}

/**
 * Rate-limiting middleware for Hono, Web-standard only: it runs on Node
 * (`@hono/node-server`), workerd, Deno and Bun.
 *
 * The route key is the pattern Hono matched (`POST /transfers/:id`), never the URL.
 * The identity comes from `identity(c)`, else from the `identityHeader` request header,
 * else from `clientIp(c)`; at least one of the three is required (construction throws
 * otherwise). The decision is set on the context:
 * `c.get('rateLimit')`.
 *
 * Options may also be a function of the context (`HonoRateLimitOptionsFactory`), called on
 * the first request and kept, for options built from env bindings; its errors then surface
 * on that request (a 500 from Hono's error handler) instead of at construction.
 *
 * @example
 * // Behind an auth middleware that has verified x-api-key:
 * app.use('/api/*', rateLimit({ limit: 100, window: '1m', identityHeader: 'x-api-key' }));
 * @example
 * app.use('*', rateLimit((c) => ({ limit: 100, window: '1m', store: storeFor(c.env), clientIp })));
 */
export function rateLimit<E extends Env = Env>(
  options: HonoRateLimitOptions<E> | HonoRateLimitOptionsFactory<E>,
): MiddlewareHandler<E & RateLimitEnv> {
  let resolved: Resolved<E> | undefined;
  let building: Promise<Resolved<E>> | undefined;
  if (typeof options === 'function') {
    const factory = options;
    // Built from the first request's context (its env bindings), then kept: one limiter and
    // one store for every request this isolate or process serves. A failed build is retried.
    const build = async (c: Context<E>): Promise<Resolved<E>> => {
      try {
        resolved = resolveHonoOptions(await factory(c));
        return resolved;
      } finally {
        building = undefined;
      }
    };
    return async function sluiceRateLimitFromContext(c, next) {
      if (resolved === undefined && building === undefined) building = build(c as unknown as Context<E>);
      const ready = resolved ?? (await (building as Promise<Resolved<E>>));
      return apply(ready, c as unknown as Context<E & RateLimitEnv>, next);
    };
  }
  resolved = resolveHonoOptions(options);
  const ready = resolved;
  return function sluiceRateLimit(c, next) {
    return apply(ready, c as unknown as Context<E & RateLimitEnv>, next);
  };
}

/** The options as validated: core's resolved options and the Hono-specific ones. */
interface Resolved<E extends Env> {
  readonly core: RateLimitHandler<Context<E>>;
  readonly clientIp: ((c: Context<E>) => string | undefined) | undefined;
  readonly onLimited: OnLimited<E> | undefined;
}

/** Every option name `rateLimit()` takes: core's and Hono's own. */
export const HONO_OPTION_NAMES: readonly string[] = Object.freeze([
  ...ADAPTER_OPTION_NAMES,
  'identityHeader',
  'clientIp',
  'onLimited',
]);

function resolveHonoOptions<E extends Env>(options: HonoRateLimitOptions<E>): Resolved<E> {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new RateLimitOptionsError(
      'options',
      options,
      'must be an object, or a function of the context returning one',
    );
  }
  const { identityHeader, clientIp, onLimited, ...shared } = options;
  if (onLimited !== undefined && typeof onLimited !== 'function') {
    throw new RateLimitOptionsError('onLimited', onLimited, 'must be a function');
  }
  if (
    identityHeader !== undefined &&
    (typeof identityHeader !== 'string' || !HEADER_NAME.test(identityHeader))
  ) {
    throw new RateLimitOptionsError('identityHeader', identityHeader, 'must be a header name');
  }
  if (clientIp !== undefined && typeof clientIp !== 'function') {
    throw new RateLimitOptionsError('clientIp', clientIp, 'must be a function');
  }
  if (shared.identity === undefined && identityHeader === undefined && clientIp === undefined) {
    throw new RateLimitOptionsError(
      'identity',
      undefined,
      'is required: give "identity" (a function of the context), "identityHeader" (a header name) or ' +
        '"clientIp" (a function of the context); Hono has no client address that works on every runtime',
    );
  }
  if (shared.identity === undefined && identityHeader !== undefined) {
    shared.identity = (c: Context<E>) => {
      const value = c.req.header(identityHeader);
      return value === undefined || value === '' ? undefined : { kind: 'key', value };
    };
  }
  const core = createRateLimitHandler<Context<E>>(shared, 'hono', { optionNames: HONO_OPTION_NAMES });
  return { core, clientIp, onLimited };
}

async function apply<E extends Env>(
  resolved: Resolved<E>,
  c: Context<E & RateLimitEnv>,
  next: () => Promise<void>,
): Promise<Response | undefined> {
  const { clientIp, onLimited } = resolved;
  const facts = {
    method: c.req.method,
    pattern: matchedPattern(c),
    path: c.req.path,
    ip: clientIp?.(c as unknown as Context<E>),
  };
  const result = await resolved.core.limitRequest(c as unknown as Context<E>, facts);
  if (result === undefined) {
    await next();
    return undefined;
  }
  const { decision, verdict } = result;
  c.set('rateLimit', decision);
  const headers = verdict.headers;
  if (verdict.action === 'pass') {
    const node = nodeResponse(c.env);
    if (node !== undefined) {
      // On @hono/node-server: straight onto the Node response. Whatever Response the app
      // answers with (c.json(), a raw `new Response()`, the error and not-found handlers)
      // is written over it, and a header of the same name the app sets wins. Cheaper than
      // c.header(), which builds a Headers object that node-server converts back.
      for (const name in headers) node.setHeader(name, headers[name] as string);
      await next();
      return undefined;
    }
    // Before next(): c.json()/c.text()/c.body() and the error and not-found handlers build
    // their response with these headers, and @hono/node-server keeps its light response
    // (setting a header on a finished response turns it into a full undici Response).
    let first: string | undefined;
    for (const name in headers) {
      first ??= name;
      c.header(name, headers[name]);
    }
    await next();
    // A raw `new Response()` from the handler does not take the prepared headers: add them.
    if (first !== undefined && !c.res.headers.has(first)) {
      for (const name in headers) c.header(name, headers[name]);
    }
    return;
  }
  if (onLimited !== undefined) {
    for (const name in headers) {
      if (name.toLowerCase() !== 'content-type') c.header(name, headers[name]);
    }
    return onLimited(c as unknown as Context<E>, verdict);
  }
  // The verdict's headers (rate-limit, Retry-After, Content-Type) as they are: a plain record
  // is the cheapest init for every runtime, and the Response never writes to it. The body is
  // core's cached serialization.
  return new Response(verdict.body === undefined ? null : problemJson(verdict.body), {
    status: verdict.status,
    headers,
  });
}
