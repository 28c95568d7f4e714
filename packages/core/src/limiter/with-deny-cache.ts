/** The deny cache as a store layer: a key set the store denied recently is denied in-process. */
import type { Clock, PolicyResult, StoreEntry, StoreVerdict } from '../types.js';
import type { RememberedDenialSource } from './counters.js';
import { resultFromVerdict } from './decision.js';
import type { DenyCache } from './deny-cache.js';
import { type StoreLayer, StoreUnavailable } from './store-answer.js';

/** The deny cache's key for a set of entries. */
const setKeyOf = (entries: readonly StoreEntry[]): string => entries.map((e) => e.key).join('\n');
const costsOf = (entries: readonly StoreEntry[]): number[] => entries.map((e) => e.cost);

/** An enforced (non-shadow) entry was denied by the store. */
function enforcedDenial(entries: readonly StoreEntry[], verdicts: readonly StoreVerdict[]): boolean {
  for (let i = 0; i < entries.length; i++)
    if (!verdicts[i]!.allowed && !entries[i]!.policy.shadow) return true;
  return false;
}

/**
 * Wraps `inner` with `cache`. A consuming call first asks the cache: a hit answers with source
 * `deny-cache` and never reaches the store (the cache only denies what the store is certain to
 * deny, see `DenyCache`). A store answer with an enforced denial is remembered from the moment
 * the call was made. An idempotent call (`requestKey`) skips the lookup, so a retry gets its
 * recorded answer; peeks pass through. A reset forgets every remembered set holding one of its keys,
 * and so does a settle that refunds one of its keys. Each denial remembered counts in `remembered`.
 */
export function withDenyCache(
  inner: StoreLayer,
  cache: DenyCache,
  clock: Clock,
  remembered?: Record<RememberedDenialSource, number>,
): StoreLayer {
  return {
    decide(entries, mode, options, then) {
      if (mode === 'peek') return inner.decide(entries, mode, options, then);
      // Read before the store call: the store decided after this moment, so a wait counted from
      // here never outlasts the store's own.
      const askedAtMs = clock();
      if (options?.requestKey === undefined && cache.size > 0) {
        const cached = cache.lookup(setKeyOf(entries), costsOf(entries), askedAtMs);
        // A result holds every field of a verdict, so it serves as both.
        if (cached !== undefined) return then({ source: 'deny-cache', verdicts: cached, results: cached });
      }
      return inner.decide(entries, mode, options, (answer) => {
        if (!(answer instanceof StoreUnavailable) && enforcedDenial(entries, answer.verdicts)) {
          const results: PolicyResult[] = entries.map((e, i) =>
            resultFromVerdict(e.policy, e.cost, answer.verdicts[i]!),
          );
          cache.remember(setKeyOf(entries), costsOf(entries), results, askedAtMs);
          if (remembered !== undefined) remembered['deny-cache']++;
        }
        return then(answer);
      });
    },
    reset(keys) {
      cache.forget(keys);
      return inner.reset(keys);
    },
    settle(entries, where) {
      // A refund gives units back: a remembered denial of these keys may no longer hold.
      const refunded = entries.filter((e) => e.actualUnits < e.reservedUnits).map((e) => e.key);
      if (refunded.length > 0) cache.forget(refunded);
      return inner.settle(entries, where);
    },
  };
}
