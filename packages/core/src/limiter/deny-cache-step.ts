/** The deny cache as a step of a check: a key set the store denied recently is denied in-process. */
import { enforcedAllow } from '../stores/charge-rule.js';
import type { PolicyResult, StoreEntry } from '../types.js';
import type { RememberedDenialSource } from './counters.js';
import { resultFromVerdict } from './decision.js';
import type { DenyCache } from './deny-cache.js';
import { type StoreAnswer, StoreUnavailable, type StoreVerdicts } from './store-answer.js';

/** The deny cache's key for a set of entries. */
const setKeyOf = (entries: readonly StoreEntry[]): string => entries.map((e) => e.key).join('\n');
const costsOf = (entries: readonly StoreEntry[]): number[] => entries.map((e) => e.cost);

/**
 * A consuming check first asks the cache: a hit answers with source `deny-cache` and never reaches
 * the store (the cache only denies what the store is certain to deny, see `DenyCache`). An answer
 * with an enforced denial (the check charged nothing) is remembered from the moment the check was
 * asked. An idempotent check skips the lookup, so a retry gets its recorded answer; peeks skip the
 * step. A reset forgets every remembered set holding one of its keys, and so does a settle that
 * refunds one of its keys. Each denial remembered counts in `remembered`.
 */
export class DenyCacheStep {
  constructor(
    private readonly cache: DenyCache,
    private readonly remembered?: Record<RememberedDenialSource, number>,
  ) {}

  /** The remembered denial of this check at `nowMs`, or undefined (ask on). */
  answer(entries: readonly StoreEntry[], nowMs: number): StoreVerdicts | undefined {
    if (this.cache.size === 0) return undefined;
    const cached = this.cache.lookup(setKeyOf(entries), costsOf(entries), nowMs);
    // A result holds every field of a verdict, so it serves as both.
    return cached === undefined ? undefined : { source: 'deny-cache', verdicts: cached, results: cached };
  }

  /** Remembers `answer` when an enforced entry was denied; `askedAtMs` is when the check asked. */
  remember(entries: readonly StoreEntry[], answer: StoreAnswer, askedAtMs: number): void {
    if (answer instanceof StoreUnavailable || enforcedAllow(entries, answer.verdicts)) return;
    const results: PolicyResult[] = entries.map((e, i) =>
      resultFromVerdict(e.policy, e.cost, answer.verdicts[i]!),
    );
    this.cache.remember(setKeyOf(entries), costsOf(entries), results, askedAtMs);
    if (this.remembered !== undefined) this.remembered['deny-cache']++;
  }

  /** Forgets every remembered set holding one of `keys` (a reset, or a refund of one of them). */
  forget(keys: readonly string[]): void {
    this.cache.forget(keys);
  }
}
