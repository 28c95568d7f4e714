/** The local stage: an in-process bucket per key that turns a burst away before the store. */

import { type TokenBucketState, tokenBucket } from '../algorithms/token-bucket.js';
import { wholeWaitMs } from '../algorithms/types.js';
import type { CompiledLocalStage, StoreEntry, StoreVerdict } from '../types.js';
import { type DenialMemory, remembersKeysOf } from './denial-memory.js';
import { type StoreAnswer, StoreUnavailable, type StoreVerdicts } from './store-answer.js';
import { type StoreCall } from './store-call.js';

/** What the local stage did with a check: nothing (no stage applies), charged its buckets, or turned it away. */
export type StageOutcome =
  | { readonly kind: 'skipped' }
  | { readonly kind: 'charged' }
  /** Per entry, the denial of the entries whose bucket was short; undefined for the others. */
  | { readonly kind: 'turned-away'; readonly denied: readonly (StoreVerdict | undefined)[] };

const SKIPPED: StageOutcome = Object.freeze({ kind: 'skipped' });
const CHARGED: StageOutcome = Object.freeze({ kind: 'charged' });

/**
 * The local stages of the policies that have one (`policy.local`): a consuming check first takes
 * its cost from each enforced entry's in-process token bucket (`burst` capacity, refilled at the
 * stage's rate, one per state key, at most `maxKeys` keys, the oldest dropped first). When a
 * bucket is short the check is denied here, source `local-stage`, nothing charged anywhere; its
 * other policies, not asked, read allowed with 0 remaining. A cost above a stage's burst is denied
 * here for good, as the store denies a cost above its capacity. Otherwise the buckets are charged
 * and the store decides as usual: the local stage counts every request that reaches the store,
 * admitted or not.
 *
 * The wait of a denial made here is the later of the bucket's and the store's, so a client that
 * waits the `Retry-After` it was told is not turned away by the store next. What the later steps
 * said of each key of the check (a denial's wait; for more than the units left, the time to a full
 * quota) is remembered in the limiter's memory of denials (`DenialMemory`: at most its maximum
 * age, forgotten by a reset or a refund here). When nothing that fresh is known of a key, a denial
 * made here first reads the store (a peek, one at a time per key: other denials wait for it), so
 * the store hears of a key the stage turns away at most about once per that maximum age. Shadow
 * policies skip their stage; peeks and idempotent checks skip the stage altogether.
 */
export class LocalStage {
  readonly #buckets = new Map<string, TokenBucketState>();
  readonly #storeWaits: DenialMemory;
  /** Reads of the store in flight, by key. */
  readonly #reads = new Map<string, Promise<void>>();

  /**
   * @param store the limiter's store call (a denial made here may first read the store)
   * @param maxKeys most buckets held
   * @param storeWaits what the store last said of each key: the limiter's one memory of denials
   */
  constructor(
    private readonly store: StoreCall,
    private readonly maxKeys: number,
    storeWaits: DenialMemory,
  ) {
    this.#storeWaits = storeWaits;
  }

  /** Charges the buckets of the check, or turns it away when one is short (charging none). */
  charge(entries: readonly StoreEntry[], nowMs: number): StageOutcome {
    let denied: (StoreVerdict | undefined)[] | undefined;
    // The buckets to charge (key and evaluation), once no bucket is short.
    const charges: [string, { charge(): TokenBucketState }][] = [];
    for (let i = 0; i < entries.length; i++) {
      const { key, policy, cost } = entries[i] as StoreEntry;
      const stage = policy.local;
      if (stage === undefined || policy.shadow) continue;
      const evaluation = tokenBucket.evaluate(this.#buckets.get(key), nowMs, paramsOf(stage, cost));
      if (evaluation.allowed) {
        charges.push([key, evaluation]);
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
    if (denied !== undefined) return { kind: 'turned-away', denied };
    if (charges.length === 0) return SKIPPED;
    for (const [key, evaluation] of charges) this.#keep(key, evaluation.charge());
    return CHARGED;
  }

  /** The answer to a check turned away: its waits once the store's are known (read for keys nothing fresh is known of). */
  async turnAway(
    entries: readonly StoreEntry[],
    denied: readonly (StoreVerdict | undefined)[],
    nowMs: number,
  ): Promise<StoreVerdicts> {
    const storeWaits = this.#storeWaits;
    const unknown = entries.filter((e) => !e.policy.shadow && !storeWaits.knows(e.key, nowMs));
    if (unknown.length > 0) {
      const waits: Promise<void>[] = [];
      for (const { key } of unknown) {
        const pending = this.#reads.get(key);
        if (pending !== undefined) waits.push(pending);
      }
      const toRead = unknown.filter((e) => !this.#reads.has(e.key));
      if (toRead.length > 0) waits.push(this.#read(toRead, nowMs));
      await Promise.all(waits);
    }
    return turnedAway(storeWaits, entries, denied, nowMs);
  }

  /**
   * After a check that passed the stage: remembers what the later steps said of each key, and makes
   * a denial made there wait at least as long as the stage's buckets make the next request wait.
   */
  afterStore(entries: readonly StoreEntry[], answer: StoreAnswer, nowMs: number): StoreAnswer {
    if (answer instanceof StoreUnavailable) return answer;
    // An answer from the memory of denials teaches it nothing, and must not renew a denial past its maximum age.
    if (answer.source !== 'deny-cache') rememberWaits(this.#storeWaits, entries, answer, nowMs);
    if (!deniedBelow(entries, answer)) return answer;
    return waitingAlso(answer, this.#bucketWaitMs(entries, nowMs));
  }

  /** Drops the buckets of `keys` (a reset). */
  reset(keys: readonly string[]): void {
    for (const key of keys) this.#buckets.delete(key);
  }

  #keep(key: string, state: TokenBucketState): void {
    const buckets = this.#buckets;
    if (!buckets.delete(key) && buckets.size >= this.maxKeys) {
      buckets.delete(buckets.keys().next().value as string);
    }
    buckets.set(key, state);
  }

  /**
   * How long the next request of this check waits for the buckets it was charged from (ms): a
   * denial made by the store must not tell a wait shorter than that.
   */
  #bucketWaitMs(entries: readonly StoreEntry[], nowMs: number): number {
    let waitMs = 0;
    for (const { key, policy, cost } of entries) {
      if (policy.local === undefined || policy.shadow) continue;
      const next = tokenBucket.evaluate(this.#buckets.get(key), nowMs, paramsOf(policy.local, cost));
      if (next.retryAfterMs > waitMs) waitMs = Math.ceil(next.retryAfterMs);
    }
    return waitMs;
  }

  /** Peeks at `entries` in the store and remembers what it said; settles when done, never rejects. */
  #read(entries: readonly StoreEntry[], atMs: number): Promise<void> {
    const forget = (): void => {
      for (const { key } of entries) this.#reads.delete(key);
    };
    const done = this.#peek(entries, atMs).then(forget, forget);
    for (const { key } of entries) this.#reads.set(key, done);
    return done;
  }

  async #peek(entries: readonly StoreEntry[], atMs: number): Promise<void> {
    const store = this.store;
    const answer = store.answersNow
      ? store.decideNow(entries, 'peek', undefined)
      : await store.decide(entries, 'peek', undefined);
    if (!(answer instanceof StoreUnavailable)) rememberWaits(this.#storeWaits, entries, answer, atMs);
  }
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
    const denial = storeWaits.waitFor(key, cost, nowMs);
    if (denial !== undefined && denial.untilMs - nowMs > waitMs) waitMs = Math.ceil(denial.untilMs - nowMs);
  }
  return waitMs;
}

/**
 * Remembers what the layers below said of each enforced entry of a check that passed the stage
 * (`DenialMemory.rememberVerdict`), of the policies whose keys are remembered (`remembersKeysOf`).
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
    if (!policy.shadow && verdict !== undefined && remembersKeysOf(policy))
      storeWaits.rememberVerdict(key, cost, atMs, verdict);
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
