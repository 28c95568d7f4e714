/**
 * The counters one request asks about. Several descriptors may count on the same counter (the same
 * descriptor twice, values under one `share_threshold` wildcard): the store sees each counter once,
 * charged their hits together, and each descriptor is answered as if counted in request order, as
 * the reference counts them one after the other (all or nothing still: a denied request charges none).
 */
import type { CompiledPolicy, StoreVerdict } from '@sluice/core';
import type { PlannedDescriptor } from './plan.js';
import { RlsTooLargeError } from './rls-types.js';

/**
 * Distinct counters one request may ask about. The store decides a request in one script call,
 * which takes a few thousand entries at most (and ~0.1 ms each): beyond this the request is refused.
 */
export const MAX_COUNTERS_PER_REQUEST = 1000;

/** One counter of a request and the descriptors that count on it. */
export interface Counter {
  readonly key: string;
  readonly policy: CompiledPolicy;
  /** Indexes of the planned descriptors counting on it, in request order. */
  readonly occurrences: readonly number[];
  /** Their hits together; 0 only looks. */
  readonly hits: number;
}

/**
 * The distinct counters of `planned`, in order of first occurrence (descriptors without a counter
 * left out). Throws `RlsTooLargeError` beyond `MAX_COUNTERS_PER_REQUEST`.
 */
export function countersOf(planned: readonly PlannedDescriptor[]): Counter[] {
  const byKey = new Map<
    string,
    { key: string; policy: CompiledPolicy; occurrences: number[]; hits: number }
  >();
  planned.forEach((d, i) => {
    const policy = d.rule?.policy;
    if (policy === undefined) return;
    const known = byKey.get(d.key);
    if (known === undefined) byKey.set(d.key, { key: d.key, policy, occurrences: [i], hits: d.hits });
    else {
      known.occurrences.push(i);
      known.hits += d.hits;
    }
  });
  if (byKey.size > MAX_COUNTERS_PER_REQUEST) {
    throw new RlsTooLargeError(
      `a request may count on at most ${MAX_COUNTERS_PER_REQUEST} distinct counters, got ${byKey.size}`,
    );
  }
  return [...byKey.values()];
}

/**
 * The verdict of each occurrence of `counter`, from the store's verdict for the counter (`charged`:
 * whether the store charged it). Occurrence j, with the hits of occurrences 1..j summed to S(j),
 * is within the limit when it only looks or when S(j) fits the units there were before the
 * request; it reports the units left after S(j), and an occurrence over the limit the counter's wait.
 */
export function spreadOver(
  planned: readonly PlannedDescriptor[],
  counter: Counter,
  verdict: StoreVerdict,
  charged: boolean,
): StoreVerdict[] {
  const before = charged ? verdict.remaining + counter.hits : verdict.remaining;
  let sum = 0;
  return counter.occurrences.map((i) => {
    const hits = (planned[i] as PlannedDescriptor).hits;
    sum += hits;
    const fits = hits === 0 || verdict.allowed || (sum < counter.hits && sum <= before);
    return fits ? withinAfter(verdict, before - sum) : verdict;
  });
}

/** An occurrence within its limit with `remaining` units left (never below 0). */
function withinAfter(verdict: StoreVerdict, remaining: number): StoreVerdict {
  if (verdict.allowed && remaining === verdict.remaining) return verdict;
  return { allowed: true, remaining: Math.max(0, remaining), resetMs: verdict.resetMs, retryAfterMs: 0 };
}
