/** `rateLimit()`: Express middleware that asks Sluice core for a decision and applies it. */
import type { Decision, HttpVerdict, RateLimitOptions } from '@sluice/core';
import {
  abortSignalOf,
  checkFrameworkOptions,
  createRateLimitHandler,
  optionNames,
  settledAsGone,
  settleOnResponseEnd,
} from '@sluice/core/adapter';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { routePattern } from './route-pattern.js';
import { checkTrustProxy } from './trust-proxy.js';

declare global {
  namespace Express {
    interface Request {
      /** The Sluice decision for this request, set by `rateLimit()` before `next()` runs. */
      rateLimit?: Decision;
    }
  }
}

/**
 * Replaces the default 429/503 response. Called after the rate-limit headers
 * (`RateLimit`, `RateLimit-Policy`, `Retry-After`) are set and `req.rateLimit` holds the
 * decision; it must end the response or call `next()` (e.g. `next(err)`).
 */
export type OnLimited = (
  req: Request,
  res: Response,
  next: NextFunction,
  verdict: HttpVerdict,
) => void | Promise<void>;

/** Options of the Express middleware: core's shared options plus `onLimited`. */
export interface ExpressRateLimitOptions extends RateLimitOptions<Request> {
  /** Replace the default problem+json response for denied (429) and unavailable (503) requests. */
  onLimited?: OnLimited;
}

/** Every option name `rateLimit()` takes: core's and `onLimited`. */
export const EXPRESS_OPTION_NAMES: readonly string[] = optionNames('express');

/**
 * Rate-limiting middleware for Express 4 and 5.
 *
 * Use it app-wide (`app.use(rateLimit(...))`) or per route
 * (`app.post('/transfers/:id', rateLimit(...), handler)`); per-route use keys `scope: 'route'`
 * policies by the matched pattern, app-wide use by the path with ids folded to `:id`.
 * The client IP is `req.ip`, so Express's own `trust proxy` setting decides whether
 * forwarded headers count. Options are validated here: bad input throws at once.
 *
 * @example
 * app.use(rateLimit({ limit: 100, window: '1m' }));
 */
export function rateLimit(options: ExpressRateLimitOptions = {}): RequestHandler {
  checkFrameworkOptions(options, 'express');
  const { onLimited, ...shared } = options;
  const resolved = createRateLimitHandler<Request>(shared, 'express', { optionNames: EXPRESS_OPTION_NAMES });

  return function sluiceRateLimit(req: Request, res: Response, next: NextFunction): void {
    checkTrustProxy(req.app, resolved.logger);
    const facts = {
      method: req.method,
      pattern: routePattern(req),
      path: req.originalUrl ?? req.url,
      ip: req.ip,
      abortSignal: abortSignalOf(res),
    };
    resolved.limitRequest(req, facts).then(
      (result) => {
        if (result === undefined) return next();
        const { decision, verdict } = result;
        req.rateLimit = decision;
        if (verdict.action === 'pass') {
          setHeaders(res, verdict.headers);
          if (result.settle !== undefined) {
            // A client gone while its check was with the store: the handler does not run.
            if (settledAsGone(res, result.settle)) return;
            settleOnResponseEnd(res, result.settle);
          }
          return next();
        }
        if (onLimited !== undefined) {
          setHeaders(res, verdict.onLimitedHeaders);
          // A sync throw or a rejection from the app's handler goes to Express's error handling.
          return new Promise<void>((done) => done(onLimited(req, res, next, verdict))).catch(next);
        }
        res.statusCode = verdict.status;
        setHeaders(res, verdict.headers);
        res.end(verdict.bodyText);
      },
      (error: unknown) => next(error),
    );
  };
}

function setHeaders(res: Response, headers: Readonly<Record<string, string>>): void {
  for (const name in headers) res.setHeader(name, headers[name]!);
}
