/** The local stage as a store layer: an in-process bucket per key that turns a burst away before the store. */
import { type TokenBucketState, tokenBucket } from '../algorithms/token-bucket.js';
import type { Clock, CompiledLocalStage, StoreEntry, StoreVerdict } from '../types.js';
import type { StoreLayer } from './store-answer.js';

/**
 * Wraps `inner` with the local stages of the policies that have one (`policy.local`): a
 * consuming check first takes its cost from each enforced entry's in-process token bucket
 * (`burst` capacity, refilled at the stage's rate, one per state key, at most `maxKeys` keys,
 * the oldest dropped first). When a bucket is short the check is denied here, source
 * `local-stage`, nothing charged anywhere and the store never asked; its other policies, not
 * asked, read allowed with 0 remaining. Otherwise the buckets are charged and the store decides
 * as usual: the local stage counts every request that reaches the store, admitted or not.
 * Shadow policies and costs above a stage's burst skip it; peeks and idempotent checks pass through.
 */
export function withLocalStage(inner: StoreLayer, clock: Clock, maxKeys: number): StoreLayer {
  const buckets = new Map<string, TokenBucketState>();
  const keep = (key: string, state: TokenBucketState): void => {
    if (!buckets.delete(key) && buckets.size >= maxKeys) {
      buckets.delete(buckets.keys().next().value as string);
    }
    buckets.set(key, state);
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
        if (stage === undefined || policy.shadow || cost > stage.burst) continue;
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
          retryAfterMs: Math.max(1, Math.ceil(evaluation.retryAfterMs)),
        };
      }
      if (denied !== undefined) {
        const verdicts = entries.map((_, i) => denied[i] ?? NOT_ASKED);
        return then({ source: 'local-stage', verdicts, results: undefined });
      }
      for (const charge of charges) charge();
      return inner.decide(entries, mode, options, then);
    },
    reset(keys) {
      for (const key of keys) buckets.delete(key);
      return inner.reset(keys);
    },
    settle(entries, where) {
      return inner.settle(entries, where);
    },
  };
}

/** The verdict of a policy a local-stage denial did not ask. */
const NOT_ASKED: StoreVerdict = Object.freeze({ allowed: true, remaining: 0, resetMs: 0, retryAfterMs: 0 });

/** The token-bucket numbers of a local stage for one cost. */
function paramsOf(stage: CompiledLocalStage, cost: number) {
  return { limit: stage.burst, windowMs: stage.burst * stage.intervalMs, intervalMs: stage.intervalMs, cost };
}
