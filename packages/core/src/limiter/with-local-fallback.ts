/** The local fallback as a store layer: `failMode: 'local'` policies decided in-process while the store cannot. */
import { fallbackFailMode } from '../policy/lease.js';
import { MemoryStore } from '../stores/memory-store.js';
import type { Clock, StoreCheckOptions, StoreEntry, StoreMode, StoreVerdict } from '../types.js';
import { failsClosed } from './fail-modes.js';
import { type AnswerHandler, type MaybePromise, type StoreLayer, StoreUnavailable } from './store-answer.js';
import { withDeadline } from './with-deadline.js';

/** A store layer that also counts the local fallback's live evictions. */
export interface LocalFallbackLayer extends StoreLayer {
  /** Keys the in-process limiter evicted while their state was live (0 before it is first used). */
  readonly liveEvictions: number;
  /** The in-process limiter, once first used. */
  readonly memory: MemoryStore | undefined;
}

/**
 * Wraps `inner`: when it answers `StoreUnavailable`, the entries of `local` policies are decided
 * by an in-process MemoryStore (created on first use, at most `maxKeys` keys; it answers now, so
 * no deadline applies) and their verdicts ride on the answer for the fail modes. Under an
 * enforced closed policy the request is denied anyway, so the fallback only peeks: nothing is
 * charged, not even locally. The fallback keeps no request records. A reservation a local
 * decision charged is settled in the fallback.
 */
export function withLocalFallback(
  inner: StoreLayer,
  clock: Clock,
  maxKeys: number,
  previous?: LocalFallbackLayer,
): LocalFallbackLayer {
  // A fallback made before (the policies changed) hands over its in-process state.
  let memory: MemoryStore | undefined = previous?.memory;
  let local: StoreLayer | undefined;
  const fallback = (): StoreLayer => {
    memory ??= new MemoryStore({ clock, maxKeys });
    local ??= withDeadline(memory, Number.POSITIVE_INFINITY);
    return local;
  };

  /** `unavailable`, carrying the fallback's verdicts for the local entries. */
  const decideLocally = <T>(
    entries: readonly StoreEntry[],
    mode: StoreMode,
    unavailable: StoreUnavailable,
    then: AnswerHandler<T>,
  ): MaybePromise<T> => {
    const given = unavailable.localVerdicts;
    const localIdx = entries.flatMap((e, i) =>
      fallbackFailMode(e.policy) === 'local' && given?.[i] === undefined ? [i] : [],
    );
    if (localIdx.length === 0) return then(unavailable);
    const localEntries = localIdx.map((i) => entries[i]!);
    // In-process: the handler runs now, inside the outer store's settlement.
    return fallback().decide(localEntries, failsClosed(entries) ? 'peek' : mode, undefined, (decided) => {
      if (decided instanceof StoreUnavailable) return then(unavailable);
      const localVerdicts: (StoreVerdict | undefined)[] = given ? [...given] : new Array(entries.length);
      localIdx.forEach((entryIndex, j) => {
        localVerdicts[entryIndex] = decided.verdicts[j];
      });
      return then(new StoreUnavailable(unavailable.cause, localVerdicts));
    }) as MaybePromise<T>;
  };

  return {
    decide<T>(
      entries: readonly StoreEntry[],
      mode: StoreMode,
      options: StoreCheckOptions | undefined,
      then: AnswerHandler<T>,
    ): MaybePromise<T> {
      return inner.decide(entries, mode, options, (answer) =>
        answer instanceof StoreUnavailable ? decideLocally(entries, mode, answer, then) : then(answer),
      ) as MaybePromise<T>;
    },
    async reset(keys) {
      if (memory !== undefined) await memory.reset(keys);
      await inner.reset(keys);
    },
    async settle(entries, where) {
      if (where === 'store') return inner.settle(entries, where);
      // A local decision was charged in the fallback: settled there, in-process.
      return memory === undefined ? 'noop' : fallback().settle(entries, 'store');
    },
    get liveEvictions() {
      return memory?.liveEvictions ?? 0;
    },
    get memory() {
      return memory;
    },
  };
}
