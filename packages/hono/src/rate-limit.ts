/** `rateLimit()`: Hono middleware that asks Sluice core for a decision and applies it. */
import {
  type Decision,
  type HttpVerdict,
  type RateLimitOptions,
  resolveRateLimitOptions,
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
   * Name of a request header that carries the identity (e.g. `'x-api-key'`). Used when
   * `identity` is not given; a request without the header falls back to `clientIp`.
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

const PROBLEM_CONTENT_TYPE = 'application/problem+json';
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

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
 * @example
 * app.use('/api/*', rateLimit({ limit: 100, window: '1m', identityHeader: 'x-api-key' }));
 */
export function rateLimit<E extends Env = Env>(
  options: HonoRateLimitOptions<E>,
): MiddlewareHandler<E & RateLimitEnv> {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError(
      `rateLimit: options must be an object, got ${options === null ? 'null' : typeof options}`,
    );
  }
  const { identityHeader, clientIp, onLimited, ...shared } = options;
  if (onLimited !== undefined && typeof onLimited !== 'function') {
    throw new TypeError(`rateLimit: "onLimited" must be a function, got ${typeof onLimited}`);
  }
  if (
    identityHeader !== undefined &&
    (typeof identityHeader !== 'string' || !HEADER_NAME.test(identityHeader))
  ) {
    throw new TypeError(`rateLimit: "identityHeader" must be a header name, got ${String(identityHeader)}`);
  }
  if (clientIp !== undefined && typeof clientIp !== 'function') {
    throw new TypeError(`rateLimit: "clientIp" must be a function, got ${typeof clientIp}`);
  }
  if (shared.identity === undefined && identityHeader === undefined && clientIp === undefined) {
    throw new TypeError(
      'rateLimit: give "identity" (a function of the context), "identityHeader" (a header name) or ' +
        '"clientIp" (a function of the context); Hono has no client address that works on every runtime',
    );
  }
  if (shared.identity === undefined && identityHeader !== undefined) {
    shared.identity = (c: Context<E>) => c.req.header(identityHeader) || undefined;
  }
  const resolved = resolveRateLimitOptions<Context<E>>(shared, 'hono');

  return async function sluiceRateLimit(c, next) {
    const facts = {
      method: c.req.method,
      pattern: matchedPattern(c),
      path: c.req.path,
      ip: clientIp?.(c as unknown as Context<E>),
    };
    const result = await resolved.decide(c as unknown as Context<E>, facts);
    if (result === undefined) return next();
    const { decision, verdict } = result;
    c.set('rateLimit', decision);
    if (verdict.action === 'pass') {
      await next();
      for (const [name, value] of Object.entries(verdict.headers)) c.header(name, value);
      return;
    }
    for (const [name, value] of Object.entries(verdict.headers)) {
      if (name.toLowerCase() !== 'content-type') c.header(name, value);
    }
    if (onLimited !== undefined) return onLimited(c as unknown as Context<E>, verdict);
    const headers = new Headers(verdict.headers);
    headers.set('content-type', PROBLEM_CONTENT_TYPE);
    return new Response(verdict.body === undefined ? null : JSON.stringify(verdict.body), {
      status: verdict.status,
      headers,
    });
  };
}
