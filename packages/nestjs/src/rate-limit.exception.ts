/** `RateLimitException`: the 429 / 503 answer, thrown through Nest's exception layer. */
import { HttpException } from '@nestjs/common';
import type { Decision, HttpVerdict, ProblemBody } from '@sluice/core';

/** What `HttpException` makes of the class name: its capitalized words, space-separated. */
const RATE_LIMIT_EXCEPTION_MESSAGE = 'Rate Limit Exception';

/**
 * Thrown by `RateLimitGuard` when a request is denied (429) or the limiter could not
 * decide under a `closed` policy (503). The response body is core's problem+json body;
 * the guard has already set the headers (`RateLimit`, `RateLimit-Policy`, `Retry-After`;
 * `Content-Type: application/problem+json` on Fastify, and on Express as the problem body
 * is written) on the response, so Nest's default exception filter answers exactly like
 * every other Sluice adapter, and an app's own filter can replace the body
 * (`exception.getResponse()`, `exception.headers`, `exception.decision`).
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

  /**
   * A `RateLimitException` without a stack trace, which is what the guard throws: a denial is
   * an answer, not a fault, and capturing the stack is most of the cost of building the
   * exception. `new RateLimitException(...)` still records one.
   */
  static create(verdict: HttpVerdict, decision: Decision): RateLimitException {
    const limit = Error.stackTraceLimit;
    try {
      Error.stackTraceLimit = 0;
    } catch {
      // A frozen `Error` (hardened runtimes): keep the stack.
      return new RateLimitException(verdict, decision);
    }
    try {
      return new RateLimitException(verdict, decision);
    } finally {
      Error.stackTraceLimit = limit;
    }
  }

  /**
   * The message Nest derives from the class name (`Rate Limit Exception`), without matching
   * a regular expression against the name on every denial.
   */
  override initMessage(): void {
    if (this.constructor === RateLimitException) this.message = RATE_LIMIT_EXCEPTION_MESSAGE;
    else super.initMessage();
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
