/**
 * The settle of a request after its response, every adapter alike: the `settle` option's units,
 * then `skipFailedRequests` / `skipSuccessfulRequests` (0 units), then `limiter.settle`. Web-standard.
 */
import type { Limiter } from '../limiter/limiter.js';
import type { ResponseFacts } from '../model/response-facts.js';
import { OPTION_DEFAULTS } from '../options/defaults.js';
import type { CostValue } from '../options/index.js';
import type { Decision } from '../types.js';
import { report, type SluiceLogger, WARNING_CODES } from '../warn.js';
import { type RequestSettle, slotLeaseOf } from './request-end.js';

export type { ResponseFacts } from '../model/response-facts.js';

/** The settle options, as `resolveRateLimitOptions` resolved them. */
export interface SettleOptions<Req> {
  readonly settle: ((req: Req, response: ResponseFacts) => CostValue | Promise<CostValue>) | undefined;
  readonly skipFailedRequests: boolean;
  readonly skipSuccessfulRequests: boolean;
  readonly requestWasSuccessful:
    | ((req: Req, response: ResponseFacts) => boolean | Promise<boolean>)
    | undefined;
  /** Where a failed settle is reported (else `console.warn`, once). */
  readonly logger?: SluiceLogger | undefined;
}

/** True when any settle option is set: checks then reserve, and the adapter settles after the response. */
export function settles<Req>(options: SettleOptions<Req>): boolean {
  return options.settle !== undefined || options.skipFailedRequests || options.skipSuccessfulRequests;
}

/** The default of `requestWasSuccessful`: completed with a status below 400. */
const succeeded = (response: ResponseFacts): boolean => response.completed && response.statusCode < 400;

/** The units to settle to: 0 for a skipped request, the `settle` option's otherwise (undefined: keep). */
async function unitsFor<Req>(
  options: SettleOptions<Req>,
  req: Req,
  response: ResponseFacts,
): Promise<CostValue | undefined> {
  if (options.skipFailedRequests || options.skipSuccessfulRequests) {
    const ok =
      options.requestWasSuccessful === undefined
        ? succeeded(response)
        : (await options.requestWasSuccessful(req, response)) === true;
    if (ok ? options.skipSuccessfulRequests : options.skipFailedRequests) return 0;
  }
  return options.settle === undefined ? undefined : options.settle(req, response);
}

/**
 * What to do once a request ended, for the adapter to call once the handler is done and its response
 * finished or its connection closed (`settleOnResponseEnd`, `settleWhenBodyEnds`; later calls do nothing): free the concurrency slots the decision holds
 * (`release`), and settle it (`settle`: the settle options ask for it). Never rejects: a throwing
 * `settle` or `requestWasSuccessful`, bad units or a store failure print one `SLUICE_SETTLE_FAILED`
 * warning; a slot the store could not free expires after its lease.
 */
export function settlerFor<Req>(
  options: SettleOptions<Req>,
  limiter: Limiter,
  req: Req,
  decision: Decision,
  work: { readonly settle: boolean; readonly release: boolean },
): RequestSettle {
  let done = false;
  const settle = async (response: ResponseFacts) => {
    if (done) return;
    done = true;
    const released = work.release ? limiter.release(decision) : undefined;
    if (work.settle) await settleAfter(options, limiter, req, decision, response);
    await released;
  };
  const slotLeaseMs = work.release
    ? (slotLeaseOf(decision) ?? OPTION_DEFAULTS.concurrencyLeaseMs)
    : undefined;
  return Object.assign(settle, { slotLeaseMs });
}

/** Settles `decision` to the units the settle options give for `response`; failures are reported, never thrown. */
async function settleAfter<Req>(
  options: SettleOptions<Req>,
  limiter: Limiter,
  req: Req,
  decision: Decision,
  response: ResponseFacts,
): Promise<void> {
  try {
    const units = await unitsFor(options, req, response);
    if (units === undefined) return;
    const answer = await limiter.settle(decision, units);
    if (answer === 'unavailable') {
      report(
        options.logger,
        'error',
        WARNING_CODES.SETTLE_FAILED,
        'a settle after the response could not reach the store: its units were not settled',
        { cause: 'unavailable' },
      );
    }
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    report(
      options.logger,
      'error',
      WARNING_CODES.SETTLE_FAILED,
      `a settle after the response failed: ${reason}`,
      {
        cause: 'error',
      },
    );
  }
}
