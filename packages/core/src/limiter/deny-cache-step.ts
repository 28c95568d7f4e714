/** The deny cache as a step of a check: a key the store denied recently denies its checks in-process. */
import { enforcedAllow } from '../stores/charge-rule.js';
import type { StoreEntry } from '../types.js';
import type { RememberedDenialSource } from './counters.js';
import type { DenialMemory } from './denial-memory.js';
import { deniedFromMemory, rememberDenied } from './deny-cache.js';
import { type StoreAnswer, StoreUnavailable, type StoreVerdicts } from './store-answer.js';

/**
 * A consuming check first asks the limiter's memory of denials: a hit answers with source
 * `deny-cache` and never reaches the store (it only denies what the store is certain to deny, see
 * deny-cache.ts). An answer with an enforced denial (the check charged nothing) is remembered, key
 * by key, from the moment the check was asked. An idempotent check skips the lookup, so a retry
 * gets its recorded answer; peeks skip the step. A reset or a refund forgets its keys in the
 * memory (one rule for every source). Each denial remembered counts in `remembered`.
 */
export class DenyCacheStep {
  constructor(
    private readonly memory: DenialMemory,
    private readonly remembered?: Record<RememberedDenialSource, number>,
  ) {}

  /** The remembered denial of this check at `nowMs`, or undefined (ask on). */
  answer(entries: readonly StoreEntry[], nowMs: number): StoreVerdicts | undefined {
    if (this.memory.size === 0) return undefined;
    const cached = deniedFromMemory(this.memory, entries, nowMs);
    // A result holds every field of a verdict, so it serves as both.
    return cached === undefined ? undefined : { source: 'deny-cache', verdicts: cached, results: cached };
  }

  /** Remembers `answer` when an enforced entry was denied; `askedAtMs` is when the check asked. */
  remember(entries: readonly StoreEntry[], answer: StoreAnswer, askedAtMs: number): void {
    if (answer instanceof StoreUnavailable || enforcedAllow(entries, answer.verdicts)) return;
    const remembered = rememberDenied(this.memory, entries, answer.verdicts, askedAtMs);
    if (remembered && this.remembered !== undefined) this.remembered['deny-cache']++;
  }
}
