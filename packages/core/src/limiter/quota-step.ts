/**
 * The quota step: the entries of regional quota policies (`policy.quota`) admitted in-process from
 * the share their quota service holds for their bucket, with no store call. An entry whose bucket
 * has no live assignment makes the check the store's failure (`StoreUnavailable`), so the policies'
 * fail modes decide, as they do when a store cannot answer.
 */

import type { QuotaSourceBucket } from '../model/quota.js';
import type { CompiledPolicy, StoreEntry, StoreVerdict } from '../types.js';
import { type StoreAnswer, StoreUnavailable } from './store-answer.js';

/** The wait told to a request the share turned away: the share refills continuously, so soon. */
const DENIED_RETRY_MS = 1000;

const ADMITTED: StoreVerdict = Object.freeze({ allowed: true, remaining: 0, resetMs: 0, retryAfterMs: 0 });
const TURNED_AWAY: StoreVerdict = Object.freeze({
  allowed: false,
  remaining: 0,
  resetMs: DENIED_RETRY_MS,
  retryAfterMs: DENIED_RETRY_MS,
});

/** Each quota policy's bucket, subscribed once (on its first check). */
export class QuotaStep {
  readonly #buckets = new WeakMap<CompiledPolicy, QuotaSourceBucket>();

  #bucketOf(policy: CompiledPolicy): QuotaSourceBucket {
    let bucket = this.#buckets.get(policy);
    if (bucket === undefined) {
      const quota = policy.quota as NonNullable<CompiledPolicy['quota']>;
      bucket = quota.service.bucket(quota.bucket);
      this.#buckets.set(policy, bucket);
    }
    return bucket;
  }

  /**
   * Takes each entry's cost from its bucket. Every entry of a quota policy's check is a quota entry
   * (`refuseQuotaMix`); each takes from its own share, so with several quota policies a denial by
   * one does not give back what the others took.
   */
  answer(entries: readonly StoreEntry[]): StoreAnswer {
    const verdicts: StoreVerdict[] = [];
    let unassigned = false;
    for (const { policy, cost } of entries) {
      const taken = this.#bucketOf(policy).take(cost);
      if (taken === 'unassigned') unassigned = true;
      verdicts.push(taken === 'denied' ? TURNED_AWAY : ADMITTED);
    }
    if (unassigned) return new StoreUnavailable('error');
    return { source: 'quota', verdicts, results: undefined };
  }
}
