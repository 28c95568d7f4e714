/** `rateLimit()`: Hono middleware that asks Sluice core for a decision and applies it. */
import type { RateLimitOptions } from '@sluice/core';
import { BuiltOnce, checkFrameworkOptions, createRateLimitHandler, optionNames } from '@sluice/core/adapter';
import type { Context, Env, MiddlewareHandler } from 'hono';
import { limitRequest, type OnLimited, type RateLimitEnv, type Resolved } from './limit-request.js';

export type { OnLimited, RateLimitEnv, RateLimitVariables } from './limit-request.js';

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
  if (typeof options === 'function') {
    // Built from the first request's context (its env bindings), then kept: one limiter and
    // one store for every request this isolate or process serves. A failed build is retried.
    const resolved = new BuiltOnce(async (c: Context<E>) => resolveHonoOptions(await options(c)));
    return async function sluiceRateLimitFromContext(c, next) {
      const ready = await resolved.get(c as unknown as Context<E>);
      return limitRequest(ready, c as unknown as Context<E & RateLimitEnv>, next);
    };
  }
  const ready = resolveHonoOptions(options);
  return function sluiceRateLimit(c, next) {
    return limitRequest(ready, c as unknown as Context<E & RateLimitEnv>, next);
  };
}

/** Every option name `rateLimit()` takes: core's and Hono's own. */
export const HONO_OPTION_NAMES: readonly string[] = optionNames('hono');

function resolveHonoOptions<E extends Env>(options: HonoRateLimitOptions<E>): Resolved<E> {
  checkFrameworkOptions(options, 'hono');
  const { identityHeader, clientIp, onLimited, ...shared } = options;
  if (shared.identity === undefined && identityHeader !== undefined) {
    shared.identity = (c: Context<E>) => {
      const value = c.req.header(identityHeader);
      return value === undefined || value === '' ? undefined : { kind: 'key', value };
    };
  }
  const core = createRateLimitHandler<Context<E>>(shared, 'hono', { optionNames: HONO_OPTION_NAMES });
  return { core, clientIp, onLimited };
}
