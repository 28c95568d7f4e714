/** `RateLimitException`: the 429 / 503 answer, thrown through Nest's exception layer. */
import { HttpException } from '@nestjs/common';
import type { Decision, HttpVerdict, ProblemBody } from '@sluice/core';

/**
 * Thrown by `RateLimitGuard` when a request is denied (429) or the limiter could not
 * decide under a `closed` policy (503). The response body is core's problem+json body;
 * the guard has already set the headers (`RateLimit`, `RateLimit-Policy`, `Retry-After`,
 * `Content-Type: application/problem+json`) on the response, so Nest's default exception
 * filter answers exactly like every other Sluice adapter, and an app's own filter can
 * replace the body (`exception.getResponse()`, `exception.headers`, `exception.decision`).
 */
export class RateLimitException extends HttpException {
  /** The verdict: status, headers and problem body. */
  readonly verdict: HttpVerdict;
  /** The decision behind it. */
  readonly decision: Decision;

  constructor(verdict: HttpVerdict, decision: Decision) {
    super(verdict.body ?? { status: verdict.status }, verdict.status);
    this.verdict = verdict;
    this.decision = decision;
  }

  /** The response headers of the verdict (`Content-Type` and `Retry-After` included). */
  get headers(): Readonly<Record<string, string>> {
    return this.verdict.headers;
  }

  /** The problem+json body. */
  override getResponse(): ProblemBody | { status: number } {
    return this.verdict.body ?? { status: this.verdict.status };
  }
}
