/** `limitRequest`: one Hono request through core, and core's verdict applied to the context. */
import type { Decision, HttpVerdict } from '@sluice/core';
import {
  abortSignalOf,
  type RateLimitHandler,
  settledAsGone,
  settleOnResponseEnd,
  settleWhenBodyEnds,
  unsentNodeResponse,
} from '@sluice/core/adapter';
import type { Context, Env } from 'hono';
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

/** The options as validated: core's resolved options and the Hono-specific ones. */
export interface Resolved<E extends Env> {
  readonly core: RateLimitHandler<Context<E>>;
  readonly clientIp: ((c: Context<E>) => string | undefined) | undefined;
  readonly onLimited: OnLimited<E> | undefined;
}

/**
 * Limits one request: the request facts from the context, core's decision and verdict, the
 * decision on `c.get('rateLimit')`, then the verdict applied: its headers and `next()` for a
 * pass, the app's `onLimited` or core's problem response for a deny.
 */
export async function limitRequest<E extends Env>(
  resolved: Resolved<E>,
  c: Context<E & RateLimitEnv>,
  next: () => Promise<void>,
): Promise<Response | undefined> {
  const context = c as unknown as Context<E>;
  const node = unsentNodeResponse((c.env as { outgoing?: unknown } | undefined)?.outgoing);
  const facts = {
    method: c.req.method,
    pattern: matchedPattern(c),
    path: c.req.path,
    ip: resolved.clientIp?.(context),
    abortSignal: node === undefined ? requestSignal(c.req.raw) : abortSignalOf(node),
  };
  const result = await resolved.core.limitRequest(context, facts);
  if (result === undefined) {
    await next();
    return undefined;
  }
  const { decision, verdict } = result;
  c.set('rateLimit', decision);
  if (verdict.action === 'pass') {
    const { settle } = result;
    // On @hono/node-server and not settling: straight onto the Node response (about 9% of an
    // allowed request, bench/instructions.mjs, against c.header(), whose Headers node-server
    // converts back); the app's Response is written over it, a header it sets of the same name wins.
    if (node !== undefined && settle === undefined) {
      for (const name in verdict.headers) node.setHeader(name, verdict.headers[name]!);
      await next();
      return undefined;
    }
    // A client gone while its check was with the store: the handler does not run.
    if (node !== undefined && settledAsGone(node, settle!)) return new Response(null, { status: 499 });
    // Before next(): c.json() and the error and not-found handlers build their response with these.
    const first = setHeaders(c, verdict.headers);
    // The slots are held until the handler is done (`next()` settled) and the response ended.
    const handled = next();
    if (node !== undefined) settleOnResponseEnd(node, settle!, handled);
    await handled;
    // Elsewhere a settle waits for the body to be read to the end (or cancelled, or dropped); a raw
    // `new Response()` from the handler does not take the prepared headers: add them.
    if (settle !== undefined) {
      if (node === undefined) c.res = settleWhenBodyEnds(c.res, settle, c.req.method);
    } else if (first !== undefined && !c.res.headers.has(first)) setHeaders(c, verdict.headers);
    return undefined;
  }
  if (resolved.onLimited !== undefined) {
    setHeaders(c, verdict.onLimitedHeaders);
    return resolved.onLimited(context, verdict);
  }
  // A plain record is the cheapest headers init on every runtime; the Response never writes to it.
  return new Response(verdict.bodyText ?? null, { status: verdict.status, headers: verdict.headers });
}

/** The `abortSignal` of a request on a Web runtime: the request's own signal, read only when asked for. */
function requestSignal(request: Request): () => AbortSignal {
  return () => request.signal;
}

/** Sets every header on the context; returns the first name, or undefined when there is none. */
function setHeaders(c: Context, headers: Readonly<Record<string, string>>): string | undefined {
  let first: string | undefined;
  for (const name in headers) {
    first ??= name;
    c.header(name, headers[name]);
  }
  return first;
}
