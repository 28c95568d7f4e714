/** `rateLimit()`: Koa middleware that asks Sluice core for a decision and applies it. */
import type { Decision, HttpVerdict, RateLimitOptions } from '@sluice/core';
import {
  abortSignalOf,
  checkFrameworkOptions,
  createRateLimitHandler,
  optionNames,
  settledAsGone,
  settleOnResponseEnd,
} from '@sluice/core/adapter';
import type { Context, Middleware, Next } from 'koa';
import { matchedRoute } from './matched-route.js';
import { checkProxy } from './proxy-warning.js';

/** What `rateLimit()` puts on `ctx.state`. */
export interface RateLimitState {
  /** The Sluice decision for this request, set before `next()` runs. */
  rateLimit?: Decision;
}

/**
 * Replaces the default 429/503 response. Called after the rate-limit headers
 * (`RateLimit`, `RateLimit-Policy`, `Retry-After`) are set and `ctx.state.rateLimit` holds
 * the decision; set `ctx.status` and `ctx.body`, or call `next()` to let the request through.
 */
export type OnLimited = (ctx: Context, next: Next, verdict: HttpVerdict) => unknown;

/** Options of the Koa middleware: core's shared options plus `onLimited`. */
export interface KoaRateLimitOptions extends RateLimitOptions<Context> {
  /** Replace the default problem+json response for denied (429) and unavailable (503) requests. */
  onLimited?: OnLimited;
}

/** Every option name `rateLimit()` takes: core's and `onLimited`. */
export const KOA_OPTION_NAMES: readonly string[] = optionNames('koa');

/**
 * Rate-limiting middleware for Koa 2 and 3.
 *
 * Use it app-wide (`app.use(rateLimit(...))`) or on @koa/router routes
 * (`router.post('/transfers/:id', rateLimit(...), handler)`); route use keys `scope: 'route'`
 * policies by the matched pattern, app-wide use by the path with ids folded to `:id`.
 * The client IP is `ctx.ip`, so Koa's `app.proxy` / `app.maxIpsCount` decide whether
 * forwarded headers count. Options are validated here: bad input throws at once.
 *
 * @example
 * app.use(rateLimit({ limit: 100, window: '1m' }));
 */
export function rateLimit(options: KoaRateLimitOptions = {}): Middleware {
  checkFrameworkOptions(options, 'koa');
  const { onLimited, ...shared } = options;
  const resolved = createRateLimitHandler<Context>(shared, 'koa', { optionNames: KOA_OPTION_NAMES });

  let checkedApp: unknown;
  return function sluiceRateLimit(ctx: Context, next: Next): Promise<unknown> {
    if (ctx.app !== checkedApp) {
      checkedApp = ctx.app;
      checkProxy(ctx.app, resolved.logger);
    }
    return resolved
      .limitRequest(ctx, {
        method: ctx.method,
        pattern: matchedRoute(ctx),
        path: ctx.originalUrl,
        ip: ctx.ip,
        abortSignal: abortSignalOf(ctx.res),
      })
      .then((result) => {
        if (result === undefined) return next();
        const { decision, verdict } = result;
        (ctx.state as RateLimitState).rateLimit = decision;
        if (verdict.action === 'pass') {
          ctx.set(verdict.headers);
          if (result.settle === undefined) return next();
          // A client gone while its check was with the store: the handler does not run.
          if (settledAsGone(ctx.res, result.settle)) return undefined;
          // The slots are held until the handler is done (`next()` settled) and the response ended.
          const handled = next();
          settleOnResponseEnd(ctx.res, result.settle, handled);
          return handled;
        }
        if (onLimited !== undefined) {
          ctx.set(verdict.onLimitedHeaders);
          return onLimited(ctx, next, verdict);
        }
        ctx.set(verdict.headers);
        ctx.status = verdict.status;
        // A string body with Content-Type already set: Koa neither sniffs a type nor serializes.
        ctx.body = verdict.bodyText;
        return undefined;
      });
  };
}
