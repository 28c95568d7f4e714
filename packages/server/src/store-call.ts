/**
 * One request's store calls: every charged descriptor in ONE atomic `decide` (all or nothing), the
 * descriptors that only look in one `peek`, each under a deadline. When the store fails, each
 * rule's `fail_mode` decides: `closed` fails the call, `open` answers OK, `local` decides in-process.
 */
import type { MemoryStore, Store, StoreEntry, StoreMode, StoreVerdict } from '@sluice/core';
import { type Counter, chargedEntries, countersOf, spreadOver } from './counters.js';
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

/** The counters of one store call and its mode. */
interface Group {
  readonly counters: readonly Counter[];
  readonly mode: StoreMode;
}

/** Whether `counter` is charged: it has hits and no `requests_per_unit: 0` rule blocked the request. */
function charges(counter: Counter, blocked: boolean): boolean {
  return counter.hits > 0 && !blocked;
}

/** A counter charges its hits together; one that only looks (or in a blocked request) is looked at. */
function groupsOf(counters: readonly Counter[], blocked: boolean): Group[] {
  const consume = counters.filter((c) => charges(c, blocked));
  const peek = counters.filter((c) => !charges(c, blocked));
  return [
    { counters: consume, mode: 'consume' },
    { counters: peek, mode: 'peek' },
  ];
}

function entriesOf(group: Group): StoreEntry[] {
  return group.counters.map((c) => ({ key: c.key, policy: c.policy, cost: Math.max(1, c.hits) }));
}

/** The group's verdicts, a counter each, and whether each counter was charged. */
async function decideGroup(
  context: StoreCallContext,
  group: Group,
): Promise<{ verdicts: CounterVerdict[]; charged: boolean[] }> {
  if (group.counters.length === 0) return { verdicts: [], charged: [] };
  const entries = entriesOf(group);
  try {
    const verdicts = await withDeadline(context.store.decide(entries, group.mode), context.timeoutMs);
    context.onStoreResult(true);
    const policies = entries.map((e) => e.policy);
    return {
      verdicts: verdicts.map((verdict) => ({ verdict })),
      charged: chargedEntries(policies, verdicts, group.mode === 'consume'),
    };
  } catch {
    context.onStoreResult(false);
    return failOver(context, group, entries);
  }
}

/** The store failed for these entries: their rules' fail modes decide. */
function failOver(
  context: StoreCallContext,
  group: Group,
  entries: readonly StoreEntry[],
): { verdicts: CounterVerdict[]; charged: boolean[] } {
  const modes = entries.map((e) => e.policy.failMode);
  if (modes.includes('closed')) throw new RlsUnavailableError('the rate limit store is unavailable');
  const localIndexes = modes.flatMap((m, j) => (m === 'local' ? [j] : []));
  const localEntries = localIndexes.map((j) => entries[j] as StoreEntry);
  const localVerdicts = context.local.decideSync(localEntries, group.mode);
  const localCharged = chargedEntries(
    localEntries.map((e) => e.policy),
    localVerdicts,
    group.mode === 'consume',
  );
  const byPosition = new Map(localIndexes.map((j, k) => [j, k]));
  const verdicts: CounterVerdict[] = [];
  const charged: boolean[] = [];
  entries.forEach((entry, j) => {
    const k = byPosition.get(j);
    if (k !== undefined) {
      verdicts.push({ verdict: localVerdicts[k] as StoreVerdict, failedOver: 'local' });
      charged.push(localCharged[k] as boolean);
      return;
    }
    const verdict: StoreVerdict = {
      allowed: true,
      remaining: entry.policy.limit,
      resetMs: 0,
      retryAfterMs: 0,
    };
    verdicts.push({ verdict, failedOver: 'open' });
    charged.push(false);
  });
  return { verdicts, charged };
}

/**
 * Decides the counters of `planned`: a verdict per descriptor index (undefined for descriptors
 * without a counter). Each counter is asked once, whatever the number of descriptors counting on
 * it (see counters.ts). `blocked` (a `requests_per_unit: 0` rule denies the request) turns every
 * charge into a look, so nothing is charged for a request that is over the limit. Throws
 * `RlsTooLargeError` for a request of too many counters, before any store call.
 */
export async function decideCounters(
  context: StoreCallContext,
  planned: readonly PlannedDescriptor[],
  blocked: boolean,
): Promise<(CounterVerdict | undefined)[]> {
  const groups = groupsOf(countersOf(planned), blocked);
  const answers = await Promise.all(groups.map((group) => decideGroup(context, group)));
  const out: (CounterVerdict | undefined)[] = planned.map(() => undefined);
  groups.forEach((group, g) => {
    const answer = answers[g] as { verdicts: CounterVerdict[]; charged: boolean[] };
    group.counters.forEach((counter, k) => {
      const { verdict, failedOver } = answer.verdicts[k] as CounterVerdict;
      const each = spreadOver(planned, counter, verdict, answer.charged[k] as boolean);
      counter.occurrences.forEach((i, n) => {
        out[i] = { verdict: each[n] as StoreVerdict, ...(failedOver === undefined ? {} : { failedOver }) };
      });
    });
  });
  return out;
}
