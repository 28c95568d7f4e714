/** The local stage as a store layer: an in-process bucket per key that turns a burst away before the store. */
import { type TokenBucketState, tokenBucket } from '../algorithms/token-bucket.js';
import { wholeWaitMs } from '../algorithms/types.js';
import type { Clock, CompiledLocalStage, StoreEntry, StoreVerdict } from '../types.js';
import { DenialMemory } from './denial-memory.js';
import {
  type AnswerHandler,
  type MaybePromise,
  type StoreLayer,
  StoreUnavailable,
  type StoreVerdicts,
} from './store-answer.js';

/**
 * Wraps `inner` with the local stages of the policies that have one (`policy.local`): a
 * consuming check first takes its cost from each enforced entry's in-process token bucket
 * (`burst` capacity, refilled at the stage's rate, one per state key, at most `maxKeys` keys,
 * the oldest dropped first). When a bucket is short the check is denied here, source
 * `local-stage`, nothing charged anywhere; its other policies, not asked, read allowed with 0
 * remaining. A cost above a stage's burst is denied here for good, as the store denies a cost
 * above its capacity. Otherwise the buckets are charged and the store decides as usual: the local
 * stage counts every request that reaches the store, admitted or not.
 *
 * The wait of a denial made here is the later of the bucket's and the store's, so a client that
 * waits the `Retry-After` it was told is not turned away by the store next. What the layers below
 * said of each key of the check (a denial's wait; for more than the units left, the time to a full
 * quota) is remembered by the rule of every in-process denial (`DenialMemory`: at most
 * `denialMaxAgeMs`, forgotten by a reset here). When nothing that fresh is known of a key, a denial
 * made here first reads the store (a peek, one at a time per key: other denials wait for it), so
 * the store hears of a key the stage turns away at most about once per `denialMaxAgeMs`. Shadow
 * policies skip their stage; peeks and idempotent checks pass through.
 */
export function withLocalStage(
  inner: StoreLayer,
  clock: Clock,
  maxKeys: number,
  denialMaxAgeMs: number,
): StoreLayer {
  const buckets = new Map<string, TokenBucketState>();
  const storeWaits = new DenialMemory(maxKeys, denialMaxAgeMs);
  /** Reads of the store in flight, by key. */
  const reads = new Map<string, Promise<void>>();
  const keep = (key: string, state: TokenBucketState): void => {
    if (!buckets.delete(key) && buckets.size >= maxKeys) {
      buckets.delete(buckets.keys().next().value as string);
    }
    buckets.set(key, state);
  };

  /**
   * How long the next request of this check waits for the buckets it was charged from (ms): a
   * denial made below must not tell a wait shorter than that.
   */
  const bucketWaitMs = (entries: readonly StoreEntry[], nowMs: number): number => {
    let waitMs = 0;
    for (const { key, policy, cost } of entries) {
      if (policy.local === undefined || policy.shadow) continue;
      const next = tokenBucket.evaluate(buckets.get(key), nowMs, paramsOf(policy.local, cost));
      if (next.retryAfterMs > waitMs) waitMs = Math.ceil(next.retryAfterMs);
    }
    return waitMs;
  };

  /** Peeks at `entries` in the store and remembers what it said; settles when done, never rejects. */
  const read = (entries: readonly StoreEntry[], atMs: number): Promise<void> => {
    let answered: MaybePromise<void>;
    try {
      answered = inner.decide(entries, 'peek', undefined, (answer) => {
        if (!(answer instanceof StoreUnavailable)) rememberWaits(storeWaits, entries, answer, atMs);
      });
    } catch {
      answered = undefined;
    }
    const forget = (): void => {
      for (const { key } of entries) reads.delete(key);
    };
    const done = Promise.resolve(answered).then(forget, forget);
    for (const { key } of entries) reads.set(key, done);
    return done;
  };

  /** Turns a check away: its waits once the store's are known (read for keys nothing fresh is known of). */
  const turnAway = <T>(
    entries: readonly StoreEntry[],
    denied: readonly (StoreVerdict | undefined)[],
    nowMs: number,
    then: AnswerHandler<T>,
  ): MaybePromise<T> => {
    const unknown = entries.filter((e) => !e.policy.shadow && !storeWaits.knows(e.key, nowMs));
    if (unknown.length === 0) return then(turnedAway(storeWaits, entries, denied, nowMs));
    const waits: Promise<void>[] = [];
    for (const { key } of unknown) {
      const pending = reads.get(key);
      if (pending !== undefined) waits.push(pending);
    }
    const toRead = unknown.filter((e) => !reads.has(e.key));
    if (toRead.length > 0) waits.push(read(toRead, nowMs));
    return Promise.all(waits).then(() => then(turnedAway(storeWaits, entries, denied, nowMs)));
  };

  return {
    decide(entries, mode, options, then) {
      if (mode !== 'consume' || options !== undefined) return inner.decide(entries, mode, options, then);
      const nowMs = clock();
      let denied: (StoreVerdict | undefined)[] | undefined;
      const charges: (() => void)[] = [];
      for (let i = 0; i < entries.length; i++) {
        const { key, policy, cost } = entries[i] as StoreEntry;
        const stage = policy.local;
        if (stage === undefined || policy.shadow) continue;
        const evaluation = tokenBucket.evaluate(buckets.get(key), nowMs, paramsOf(stage, cost));
        if (evaluation.allowed) {
          charges.push(() => keep(key, evaluation.charge()));
          continue;
        }
        denied ??= new Array(entries.length);
        denied[i] = {
          allowed: false,
          remaining: 0,
          resetMs: Math.ceil(evaluation.resetMs),
          // -1: never (a cost above the burst), as the store says it.
          retryAfterMs: evaluation.retryAfterMs < 0 ? -1 : Math.max(1, wholeWaitMs(evaluation.retryAfterMs)),
        };
      }
      if (denied !== undefined) return turnAway(entries, denied, nowMs, then);
      if (charges.length === 0) return inner.decide(entries, mode, options, then);
      for (const charge of charges) charge();
      return inner.decide(entries, mode, options, (answer) => {
        if (answer instanceof StoreUnavailable) return then(answer);
        rememberWaits(storeWaits, entries, answer, nowMs);
        if (!deniedBelow(entries, answer)) return then(answer);
        return then(waitingAlso(answer, bucketWaitMs(entries, nowMs)));
      });
    },
    reset(keys) {
      for (const key of keys) buckets.delete(key);
      storeWaits.forget(keys);
      return inner.reset(keys);
    },
    settle(entries, where) {
      // A refund gives units back: a remembered wait of these keys may be too long now.
      const refunded = entries.filter((e) => e.actualUnits < e.reservedUnits).map((e) => e.key);
      if (refunded.length > 0) storeWaits.forget(refunded);
      return inner.settle(entries, where);
    },
  };
}

/**
 * The answer to a check the stage turned away: each denied entry waits at least as long as the
 * store is known to make any entry of the check wait (a wait of -1, never, stays); the others not asked.
 */
function turnedAway(
  storeWaits: DenialMemory,
  entries: readonly StoreEntry[],
  denied: readonly (StoreVerdict | undefined)[],
  nowMs: number,
): StoreVerdicts {
  const storeMs = storeWaitMs(storeWaits, entries, nowMs);
  const verdicts = entries.map((_, i) => {
    const verdict = denied[i];
    if (verdict === undefined) return NOT_ASKED;
    return verdict.retryAfterMs < 0 ? verdict : waitingAtLeast(verdict, storeMs);
  });
  return { source: 'local-stage', verdicts, results: undefined };
}

/** The verdict of a policy a local-stage denial did not ask. */
const NOT_ASKED: StoreVerdict = Object.freeze({ allowed: true, remaining: 0, resetMs: 0, retryAfterMs: 0 });

/** The token-bucket numbers of a local stage for one cost. */
function paramsOf(stage: CompiledLocalStage, cost: number) {
  return { limit: stage.burst, windowMs: stage.burst * stage.intervalMs, intervalMs: stage.intervalMs, cost };
}

/** The longest remembered wait of the store for any entry of the check (ms), 0 for none. */
function storeWaitMs(storeWaits: DenialMemory, entries: readonly StoreEntry[], nowMs: number): number {
  let waitMs = 0;
  for (const { key, policy, cost } of entries) {
    if (policy.shadow) continue;
    const denial = storeWaits.lookup(key, cost, nowMs);
    if (denial !== undefined && denial.untilMs - nowMs > waitMs) waitMs = Math.ceil(denial.untilMs - nowMs);
  }
  return waitMs;
}

/**
 * Remembers what the layers below said of each enforced entry of a check that passed the stage:
 * a denied cost waits the denial's `retryAfterMs`; more than the units left waits at most until
 * the quota is full again (`resetMs`).
 */
function rememberWaits(
  storeWaits: DenialMemory,
  entries: readonly StoreEntry[],
  answer: StoreVerdicts,
  atMs: number,
): void {
  for (let i = 0; i < entries.length; i++) {
    const { key, policy, cost } = entries[i] as StoreEntry;
    const verdict = answer.verdicts[i];
    if (policy.shadow || verdict === undefined) continue;
    if (!verdict.allowed && verdict.retryAfterMs > 0) {
      storeWaits.remember(key, cost, atMs, atMs + verdict.retryAfterMs, verdict);
    } else if (verdict.allowed && verdict.resetMs > 0) {
      // Whole units left, as the client is told; a request of more waits at most for a full quota.
      const left = Math.floor(verdict.remaining + 1e-9);
      storeWaits.remember(key, left + 1e-6, atMs, atMs + verdict.resetMs, verdict);
    } else storeWaits.rememberNoWait(key, atMs);
  }
}

/** Whether an enforced entry was denied below with a wait. */
function deniedBelow(entries: readonly StoreEntry[], answer: StoreVerdicts): boolean {
  for (let i = 0; i < entries.length; i++) {
    const verdict = answer.verdicts[i];
    if (verdict !== undefined && !verdict.allowed && verdict.retryAfterMs > 0 && !entries[i]!.policy.shadow)
      return true;
  }
  return false;
}

/** A verdict (or result) of a denial made to wait at least `waitMs`. */
function waitingAtLeast<V extends StoreVerdict>(verdict: V, waitMs: number): V {
  const { allowed, retryAfterMs } = verdict;
  return !allowed && retryAfterMs > 0 && retryAfterMs < waitMs
    ? { ...verdict, retryAfterMs: waitMs }
    : verdict;
}

/** `answer` with every wait of a denial at least `waitMs`. */
function waitingAlso(answer: StoreVerdicts, waitMs: number): StoreVerdicts {
  if (waitMs <= 0) return answer;
  return {
    source: answer.source,
    verdicts: answer.verdicts.map((v) => waitingAtLeast(v, waitMs)),
    results: answer.results?.map((r) => waitingAtLeast(r, waitMs)),
  };
}
