/**
 * One request's store calls: every charged descriptor in ONE atomic `decide` (all or nothing), the
 * descriptors that only look in one `peek`, each under a deadline. When the store fails, each
 * rule's `fail_mode` decides: `closed` fails the call, `open` answers OK, `local` decides in-process.
 */
import type { MemoryStore, Store, StoreEntry, StoreMode, StoreVerdict } from '@sluice/core';
import type { PlannedDescriptor } from './plan.js';
import { RlsUnavailableError } from './rls-types.js';

/** The verdict of a descriptor that has a counter, and whether it came from a failure mode. */
export interface CounterVerdict {
  readonly verdict: StoreVerdict;
  /** `open`: admitted without the store; `local`: decided by the in-process store. */
  readonly failedOver?: 'open' | 'local';
}

/** What the call needs to reach the store. */
export interface StoreCallContext {
  readonly store: Store;
  readonly local: MemoryStore;
  readonly timeoutMs: number;
  /** Told after each call whether the store answered (feeds /healthcheck and the redis_error count). */
  readonly onStoreResult: (ok: boolean) => void;
}

/** `promise`, or a rejection once `timeoutMs` passed. */
export function withDeadline<T>(promise: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`store call exceeded ${timeoutMs} ms`)), timeoutMs);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

/**
 * A descriptor with 0 hits only looks: it is within its limit (Sluice never counts past a limit),
 * with the units left as the store reports them, as the reference answers a 0 hits_addend.
 */
function looked(d: PlannedDescriptor, verdict: StoreVerdict): StoreVerdict {
  return d.hits === 0 && !verdict.allowed ? { ...verdict, allowed: true, retryAfterMs: 0 } : verdict;
}

/** Indexes of planned descriptors with a counter, split by whether they charge. */
function splitByMode(planned: readonly PlannedDescriptor[], blocked: boolean): Record<StoreMode, number[]> {
  const split: Record<StoreMode, number[]> = { consume: [], peek: [] };
  planned.forEach((d, i) => {
    if (d.rule?.policy === undefined) return;
    split[d.hits > 0 && !blocked ? 'consume' : 'peek'].push(i);
  });
  return split;
}

function entriesOf(planned: readonly PlannedDescriptor[], indexes: readonly number[]): StoreEntry[] {
  return indexes.map((i) => {
    const d = planned[i] as PlannedDescriptor;
    return { key: d.key, policy: d.rule?.policy as StoreEntry['policy'], cost: Math.max(1, d.hits) };
  });
}

async function decideGroup(
  context: StoreCallContext,
  planned: readonly PlannedDescriptor[],
  indexes: readonly number[],
  mode: StoreMode,
): Promise<CounterVerdict[]> {
  if (indexes.length === 0) return [];
  const entries = entriesOf(planned, indexes);
  try {
    const verdicts = await withDeadline(context.store.decide(entries, mode), context.timeoutMs);
    context.onStoreResult(true);
    return verdicts.map((verdict, k) => ({
      verdict: looked(planned[indexes[k] as number] as PlannedDescriptor, verdict),
    }));
  } catch {
    context.onStoreResult(false);
    return failOver(context, planned, indexes, entries, mode);
  }
}

/** The store failed for these entries: their rules' fail modes decide. */
async function failOver(
  context: StoreCallContext,
  planned: readonly PlannedDescriptor[],
  indexes: readonly number[],
  entries: readonly StoreEntry[],
  mode: StoreMode,
): Promise<CounterVerdict[]> {
  const modes = indexes.map((i) => planned[i]?.rule?.failMode ?? 'closed');
  if (modes.includes('closed')) throw new RlsUnavailableError('the rate limit store is unavailable');
  const localIndexes = modes.flatMap((m, j) => (m === 'local' ? [j] : []));
  const localVerdicts = context.local.decideSync(
    localIndexes.map((j) => entries[j] as StoreEntry),
    mode,
  );
  const byPosition = new Map(localIndexes.map((j, k) => [j, localVerdicts[k] as StoreVerdict]));
  return entries.map((entry, j) => {
    const local = byPosition.get(j);
    if (local !== undefined) return { verdict: local, failedOver: 'local' };
    const verdict: StoreVerdict = {
      allowed: true,
      remaining: entry.policy.limit,
      resetMs: 0,
      retryAfterMs: 0,
    };
    return { verdict, failedOver: 'open' };
  });
}

/**
 * Decides the counters of `planned`: a verdict per descriptor index (undefined for descriptors
 * without a counter). `blocked` (a `requests_per_unit: 0` rule denies the request) turns every
 * charge into a look, so nothing is charged for a request that is over the limit.
 */
export async function decideCounters(
  context: StoreCallContext,
  planned: readonly PlannedDescriptor[],
  blocked: boolean,
): Promise<(CounterVerdict | undefined)[]> {
  const split = splitByMode(planned, blocked);
  const [consumed, peeked] = await Promise.all([
    decideGroup(context, planned, split.consume, 'consume'),
    decideGroup(context, planned, split.peek, 'peek'),
  ]);
  const out: (CounterVerdict | undefined)[] = planned.map(() => undefined);
  split.consume.forEach((i, k) => {
    out[i] = consumed[k];
  });
  split.peek.forEach((i, k) => {
    out[i] = peeked[k];
  });
  return out;
}
