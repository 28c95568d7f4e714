/** `RateLimitGuard`: asks core for a decision for each request and applies it. */
import { type CanActivate, type ExecutionContext, Injectable } from '@nestjs/common';
import type { Decision } from '@sluice/core';
import {
  abortSignalOf,
  holdsSlots,
  type RequestFacts,
  type RequestSettle,
  setResponseHeader,
  settledAsGone,
  settleOnResponseEnd,
  unsentNodeResponse,
} from '@sluice/core/adapter';
import { deferContentType, isJsonResponse } from './content-type.js';
import type { RateLimitRequest } from './module-options.js';
import { RateLimitException } from './rate-limit.exception.js';
import { RateLimitService } from './rate-limit.service.js';
import { handlerMethod, handlerPattern } from './route-pattern.js';

/**
 * What the guard needs to know about one request; see `RateLimitGuard.getRequestFacts`.
 * Core's facts (`method`, `pattern`, `path`, `ip`, optional `marker`) plus the objects.
 */
export interface GuardRequestFacts extends RequestFacts {
  /**
   * The request object passed to `identity`, `cost` and `skip`. It also marks the request
   * for double-count protection, unless `marker` is given.
   */
  readonly request: object;
  /** Where headers go: an Express / Node response or a Fastify reply. Undefined: no headers. */
  readonly response?: unknown;
}

/**
 * Rate limits HTTP requests. Register it app-wide
 * (`{ provide: APP_GUARD, useClass: RateLimitGuard }`) or per controller or handler
 * (`@UseGuards(RateLimitGuard)`); both on one request charge once. Denials throw a
 * `RateLimitException` (429, or 503 under a `closed` policy when the store is down)
 * after setting the headers, so exception filters still apply. The decision is set on
 * the request as `req.rateLimit`.
 *
 * Other contexts (GraphQL, WebSocket, RPC) pass unlimited by default; to limit them,
 * extend the guard and override `getRequestFacts` (see the package README).
 */
@Injectable()
export class RateLimitGuard implements CanActivate {
  constructor(protected readonly rateLimit: RateLimitService) {}

  /** Decides the request; true lets it through, a `RateLimitException` denies it. */
  async canActivate(context: ExecutionContext): Promise<boolean> {
    const route = this.rateLimit.forRoute(context.getClass(), context.getHandler());
    if (route === undefined) return true;
    const facts = this.getRequestFacts(context);
    if (facts === undefined) return true;
    // Core charges a request once per limiter and policy set: a second guard gets the first decision.
    const result = await route.limitRequest(facts.request as RateLimitRequest, facts);
    if (result === undefined) return true;
    const { decision, verdict } = result;
    this.setDecision(facts, decision);
    if (verdict.action === 'pass') {
      this.setHeaders(facts, verdict.headers);
      const node = unsentNodeResponse(facts.response);
      if (result.settle === undefined) return true;
      if (node === undefined) return refuseSlots(result.settle, decision, context);
      // A client gone while its check was with the store: the handler does not run.
      if (settledAsGone(node, result.settle)) return false;
      settleOnResponseEnd(node, result.settle);
      return true;
    }
    // On Express the problem+json type is set as the body is written (see content-type.ts).
    const deferTo = isJsonResponse(facts.response) ? facts.response : undefined;
    if (deferTo === undefined) this.setHeaders(facts, verdict.headers);
    else {
      this.setHeaders(facts, verdict.onLimitedHeaders);
      deferContentType(deferTo, verdict.body!, verdict.contentType!);
    }
    throw RateLimitException.create(verdict, decision);
  }

  /**
   * Translates the execution context into request facts. The default handles HTTP on the
   * Express and Fastify platforms: the route pattern from the controller's and handler's
   * path metadata, the client IP from `req.ip`, the abort signal from the Node response.
   * Returns `undefined` (not limited) for any other context type. Override it to limit
   * GraphQL, WebSocket or RPC handlers.
   */
  protected getRequestFacts(context: ExecutionContext): GuardRequestFacts | undefined {
    if (context.getType() !== 'http') return undefined;
    const http = context.switchToHttp();
    const request = http.getRequest<{ method: string; url: string; originalUrl?: string; ip?: string }>();
    const response = http.getResponse();
    const node = unsentNodeResponse(response);
    return {
      request,
      response,
      method: handlerMethod(context.getHandler(), request.method),
      pattern: handlerPattern(context.getClass(), context.getHandler()),
      path: request.originalUrl ?? request.url,
      ip: request.ip,
      abortSignal: node === undefined ? undefined : abortSignalOf(node),
    };
  }

  /** Sets a response header on an Express / Node response or a Fastify reply. */
  protected setHeader(facts: GuardRequestFacts, name: string, value: string): void {
    setResponseHeader(facts.response, name, value);
  }

  private setHeaders(facts: GuardRequestFacts, headers: Readonly<Record<string, string>>): void {
    for (const name in headers) this.setHeader(facts, name, headers[name]!);
  }

  /** Makes the decision available to handlers: `req.rateLimit`. */
  protected setDecision(facts: GuardRequestFacts, decision: Decision): void {
    (facts.request as { rateLimit?: Decision }).rateLimit = decision;
  }
}

/**
 * Without a Node response (WebSocket, RPC, GraphQL over another transport) the guard cannot tell
 * when the handler ends, so a concurrency slot taken there would never be released: the slots
 * are freed at once and the request refused with a TypeError naming the policy. A decision
 * holding no slots goes on (its settle options, if any, are not applied there). Returns true.
 */
function refuseSlots(settle: RequestSettle, decision: Decision, context: ExecutionContext): true {
  if (settle.slotLeaseMs === undefined) return true;
  void settle({ statusCode: 200, completed: false });
  const policies = decision.results.filter(holdsSlots).map((r) => `"${r.policy}"`);
  const handler = `${context.getClass().name}.${context.getHandler().name}`;
  throw new TypeError(
    `@sluice/nestjs: concurrency policy ${policies.join(', ')} on ${handler} cannot limit a '${context.getType()}' ` +
      'context: the guard cannot tell when a handler there ends, so its slot would never be released. ' +
      'Use rate policies there (concurrency policies limit HTTP handlers).',
  );
}
