/** What the limiter's store layers answer: verdicts and who gave them, or "the store could not decide". */
import type {
  PolicyResult,
  StoreCheckOptions,
  StoreEntry,
  StoreMode,
  StoreSettleEntry,
  StoreVerdict,
} from '../types.js';

/** Why the store could not decide. */
export type UnavailableCause = 'error' | 'timeout' | 'breaker-open' | 'wrong-verdict-count';

/**
 * The store could not decide this call: it threw or rejected, missed its deadline, answered with
 * the wrong number of verdicts, or the breaker is open. The fail modes decide instead.
 */
export class StoreUnavailable {
  /**
   * @param cause why the store could not decide
   * @param localVerdicts by entry index, the verdicts the in-process fallback gave for the
   *   `failMode: 'local'` entries (and a live lease for the `failMode: 'lease'` ones); undefined
   *   where none was given
   */
  constructor(
    readonly cause: UnavailableCause,
    readonly localVerdicts?: readonly (StoreVerdict | undefined)[],
  ) {}
}

/** Verdicts for every entry, in entry order, and where they came from. */
export interface StoreVerdicts {
  /**
   * `store`: the store decided; `deny-cache`: an in-process memory of a store denial did;
   * `lease`: leases taken before did (no store call); `local-stage`: a policy's local stage
   * turned the request away (no store call); `quota`: a regional quota's share did (no store call).
   */
  readonly source: 'store' | 'deny-cache' | 'lease' | 'local-stage' | 'quota';
  readonly verdicts: readonly StoreVerdict[];
  /**
   * The per-policy results themselves when the answer already holds them (a deny-cache hit: the
   * remembered results, waits counted down), so they are not made again; undefined otherwise.
   */
  readonly results: readonly PolicyResult[] | undefined;
}

/** One call's answer through the store layers. */
export type StoreAnswer = StoreVerdicts | StoreUnavailable;

/**
 * A value now, or a promise of it. A store that decides in-process (`Store.decideSync`) answers
 * now, and so does every layer above it: no promise per call (about 5% of an HTTP request).
 */
export type MaybePromise<T> = T | Promise<T>;

/** What a store layer hands its answer to: the next layer out, and last the limiter's pipeline. */
export type AnswerHandler<T> = (answer: StoreAnswer) => T;

/**
 * The store as the limiter calls it: `Store` with an answer that never rejects. The store itself
 * is wrapped once (deadline) and each wrapper adds one thing (breaker, local fallback, deny cache).
 */
export interface StoreLayer {
  /**
   * Decides every entry in one atomic call, like `Store.decide`; a failure is `StoreUnavailable`.
   * The answer goes to `then`, and `decide` returns what `then` returns: now when the store
   * answers now, else a promise of it. Each layer hands the next layer out a handler of its own,
   * so the whole stack runs inside the store's one settlement: a layer adds no promise hop (two
   * hops per Redis check before, 2.6% of a limiter check with Redis, counted with
   * bench/instructions.mjs; see bench/README.md).
   */
  decide<T>(
    entries: readonly StoreEntry[],
    mode: StoreMode,
    options: StoreCheckOptions | undefined,
    then: AnswerHandler<T>,
  ): MaybePromise<T>;
  /** Deletes the state behind `keys` in the store and in every layer that holds some. Rejects on failure. */
  reset(keys: readonly string[]): Promise<void>;
  /**
   * Settles a reservation (`Store.settle`) in the store, or with `where: 'local'` in the local
   * fallback that charged it. Never rejects: a failure (an error, a missed deadline, an open
   * breaker, a store without `settle`) is `'unavailable'`.
   */
  settle(entries: readonly StoreSettleEntry[], where: SettleWhere): Promise<SettleAnswer>;
}

/** Where a reservation was charged: the store, or the local fallback (a `local` decision). */
export type SettleWhere = 'store' | 'local';

/**
 * What a settle came to: `settled` (the store applied at least one entry), `noop` (nothing to
 * settle: already settled, not a reservation, the keys expired or their window is over) or
 * `unavailable` (the store failed; nothing is retried).
 */
export type SettleAnswer = 'settled' | 'noop' | 'unavailable';

/** The answer for the store's per-entry flags. */
export function settleAnswerOf(flags: unknown, entries: readonly StoreSettleEntry[]): SettleAnswer {
  if (!Array.isArray(flags) || flags.length !== entries.length) return 'unavailable';
  return flags.includes(true) ? 'settled' : 'noop';
}

/** The store's verdicts as an answer, or `StoreUnavailable` when they do not fit the entries. */
export function answerOf(entries: readonly StoreEntry[], verdicts: unknown): StoreAnswer {
  if (!Array.isArray(verdicts) || verdicts.length !== entries.length) {
    return new StoreUnavailable('wrong-verdict-count');
  }
  return { source: 'store', verdicts: verdicts as StoreVerdict[], results: undefined };
}
