/**
 * One request's counters decided through the limiter (`limiter.checkEntries`, the check every
 * adapter makes: breaker, deadline, local fallback, fail modes, metrics and traces in one place):
 * every charged counter in ONE atomic call (all or nothing), the counters that only look in one peek.
 * The service keeps what is its own: which counters a request has, and their verdicts per descriptor.
 */
import type { Limiter, PolicyResult, StoreVerdict } from '@sluice/core';
import { chargedOf } from '@sluice/core/adapter';
import { type Counter, countersOf, spreadOver } from './counters.js';
import type { PlannedDescriptor } from './plan.js';
import { RlsUnavailableError } from './rls-types.js';

/** The verdict of a descriptor that has a counter. */
export interface CounterVerdict {
  readonly verdict: StoreVerdict;
}

/** What deciding a request needs. */
export interface DecideContext {
  readonly limiter: Limiter;
  /** Told after each call whether the store decided it (feeds /healthcheck and the redis_error count). */
  readonly onStoreResult: (ok: boolean) => void;
}

/** Whether `counter` is charged: it has hits and no `requests_per_unit: 0` rule blocked the request. */
function charges(counter: Counter, blocked: boolean): boolean {
  return counter.hits > 0 && !blocked;
}

/** The store verdict behind one result: one the store (or the local fallback) decided, or a fail mode's. */
function verdictOf(result: PolicyResult): StoreVerdict {
  if (result.outcome === 'unavailable') {
    // No state was read: `open` admits with the whole limit; a shadow `closed` rule is a shadowed denial.
    return {
      allowed: result.allowed,
      remaining: result.allowed ? result.limit : 0,
      resetMs: 0,
      retryAfterMs: 0,
    };
  }
  // A cost that never fits has no wait (the limiter reports 0): -1, answered with the time to a full quota.
  const retryAfterMs = result.allowed || result.retryAfterMs > 0 ? result.retryAfterMs : -1;
  return { allowed: result.allowed, remaining: result.remaining, resetMs: result.resetMs, retryAfterMs };
}

/**
 * The counters' verdicts and whether each was charged (core's `chargedOf`: the store's charge
 * rule, the local fallback's for `local` rules, nothing for a fail mode's answer), from one
 * limiter call. Throws `RlsUnavailableError` when an enforced rule failed closed.
 */
async function decideGroup(
  context: DecideContext,
  counters: readonly Counter[],
  consumed: boolean,
): Promise<{ verdicts: CounterVerdict[]; charged: boolean[] }> {
  if (counters.length === 0) return { verdicts: [], charged: [] };
  const entries = counters.map((c) => ({ key: c.key, policy: c.policy, cost: Math.max(1, c.hits) }));
  const decision = await context.limiter.checkEntries(entries, consumed ? 'consume' : 'peek');
  context.onStoreResult(decision.source === 'store');
  if (decision.source === 'fail-closed') throw new RlsUnavailableError('the rate limit store is unavailable');
  const charged = new Set<object>(consumed ? chargedOf(decision, entries)?.entries : undefined);
  return {
    verdicts: decision.results.map((r) => ({ verdict: verdictOf(r) })),
    charged: entries.map((e) => charged.has(e)),
  };
}

/**
 * Decides the counters of `planned`: a verdict per descriptor index (undefined for descriptors
 * without a counter). Each counter is asked once, whatever the number of descriptors counting on
 * it (see counters.ts). `blocked` (a `requests_per_unit: 0` rule denies the request) turns every
 * charge into a look, so nothing is charged for a request that is over the limit. Throws
 * `RlsTooLargeError` for a request of too many counters, before any store call, and
 * `RlsUnavailableError` when the store failed and an enforced rule fails `closed`.
 */
export async function decideCounters(
  context: DecideContext,
  planned: readonly PlannedDescriptor[],
  blocked: boolean,
): Promise<(CounterVerdict | undefined)[]> {
  const counters = countersOf(planned);
  const consume = counters.filter((c) => charges(c, blocked));
  const peek = counters.filter((c) => !charges(c, blocked));
  const groups = [consume, peek];
  const answers =
    peek.length === 0
      ? [await decideGroup(context, consume, true)]
      : await Promise.all([decideGroup(context, consume, true), decideGroup(context, peek, false)]);
  const out: (CounterVerdict | undefined)[] = planned.map(() => undefined);
  answers.forEach((answer, g) => {
    (groups[g] as Counter[]).forEach((counter, k) => {
      const { verdict } = answer.verdicts[k] as CounterVerdict;
      const each = spreadOver(planned, counter, verdict, answer.charged[k] as boolean);
      counter.occurrences.forEach((i, n) => {
        out[i] = { verdict: each[n] as StoreVerdict };
      });
    });
  });
  return out;
}
