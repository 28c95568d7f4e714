/** The local fallback: `failMode: 'local'` policies decided in-process while the store cannot. */

import { fallbackFailMode } from '../policy/lease.js';
import { MemoryStore } from '../stores/memory-store.js';
import type { Clock, StoreEntry, StoreMode, StoreSettleEntry, StoreVerdict } from '../types.js';
import { failsClosed } from './decision.js';
import { type SettleAnswer, StoreUnavailable, settleAnswerOf } from './store-answer.js';
import { answerOf } from './store-call.js';

/** `entry` without its `maxWaitMs`: the local fallback answers at once. */
function withoutWait(entry: StoreEntry): StoreEntry {
  if (entry.maxWaitMs === undefined) return entry;
  const { maxWaitMs: _wait, ...rest } = entry;
  return rest;
}

/**
 * When the store could not decide, the entries of `local` policies are decided by an in-process
 * MemoryStore (created on first use, at most `maxKeys` keys; it answers now, so no deadline
 * applies) and their verdicts ride on `StoreUnavailable` for the fail modes. Under an enforced
 * closed policy the request is denied anyway, so the fallback only peeks: nothing is charged, not
 * even locally. The fallback keeps no request records. A reservation a local decision charged is
 * settled here.
 */
export class LocalFallback {
  #memory: MemoryStore | undefined;

  /**
   * @param previous the fallback of the policies before an update: its in-process state carries on
   */
  constructor(
    private readonly clock: Clock,
    private readonly maxKeys: number,
    previous?: LocalFallback,
  ) {
    this.#memory = previous?.memory;
  }

  /** The in-process limiter, once first used. */
  get memory(): MemoryStore | undefined {
    return this.#memory;
  }

  /** Keys the in-process limiter evicted while their state was live (0 before it is first used). */
  get liveEvictions(): number {
    return this.#memory?.liveEvictions ?? 0;
  }

  /** `unavailable`, carrying the fallback's verdicts for the local entries that have none yet. */
  decide(entries: readonly StoreEntry[], mode: StoreMode, unavailable: StoreUnavailable): StoreUnavailable {
    const given = unavailable.localVerdicts;
    const localIdx = entries.flatMap((e, i) =>
      fallbackFailMode(e.policy) === 'local' && given?.[i] === undefined ? [i] : [],
    );
    if (localIdx.length === 0) return unavailable;
    // Nothing waits while the store is down: a turn reserved here would not be the fleet's.
    const localEntries = localIdx.map((i) => withoutWait(entries[i]!));
    this.#memory ??= new MemoryStore({ clock: this.clock, maxKeys: this.maxKeys });
    let decided: ReturnType<typeof answerOf>;
    try {
      decided = answerOf(
        localEntries,
        this.#memory.decideSync(localEntries, failsClosed(entries) ? 'peek' : mode),
      );
    } catch {
      return unavailable;
    }
    if (decided instanceof StoreUnavailable) return unavailable;
    const localVerdicts: (StoreVerdict | undefined)[] = given ? [...given] : new Array(entries.length);
    localIdx.forEach((entryIndex, j) => {
      localVerdicts[entryIndex] = decided.verdicts[j];
    });
    return new StoreUnavailable(unavailable.cause, localVerdicts);
  }

  /** Settles a reservation a local decision charged, in-process. */
  settle(entries: readonly StoreSettleEntry[]): SettleAnswer {
    if (this.#memory === undefined) return 'noop';
    try {
      return settleAnswerOf(this.#memory.settleSync(entries), entries);
    } catch {
      return 'unavailable';
    }
  }

  /** Deletes the in-process state behind `keys`. */
  async reset(keys: readonly string[]): Promise<void> {
    if (this.#memory !== undefined) await this.#memory.reset(keys);
  }
}
