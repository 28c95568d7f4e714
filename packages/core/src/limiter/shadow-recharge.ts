/**
 * The second store call of a check that only a shadow policy denied. The store charges nothing
 * when any entry denies, so the enforced entries are charged again on their own: a shadow policy
 * observes, it never blocks the others.
 */
import type { StoreCheckOptions, StoreEntry, StoreVerdict } from '../types.js';
import { andThen, type StoreLayer, StoreUnavailable } from './store-answer.js';

/** Store call options of an idempotent check that may make the second call: its own record key. */
export interface RechargeOptions extends StoreCheckOptions {
  /** The request record key of the second call, so a retry replays both calls. */
  readonly rechargeRequestKey?: string;
}

/** The options of the first call (index 0) or the second (index 1), without the second's key. */
function callOptions(options: RechargeOptions | undefined, index: 0 | 1): StoreCheckOptions | undefined {
  const requestKey = index === 0 ? options?.requestKey : options?.rechargeRequestKey;
  const requestTtlMs = options?.requestTtlMs;
  return requestKey === undefined || requestTtlMs === undefined ? undefined : { requestKey, requestTtlMs };
}

/** Indexes of the enforced entries when only shadow entries denied, else undefined (nothing to redo). */
function rechargeable(
  entries: readonly StoreEntry[],
  verdicts: readonly StoreVerdict[],
): number[] | undefined {
  let shadowDenied = false;
  const enforced: number[] = [];
  for (let i = 0; i < entries.length; i++) {
    const allowed = verdicts[i]!.allowed;
    if (entries[i]!.policy.shadow) {
      if (!allowed) shadowDenied = true;
    } else if (!allowed) {
      return undefined;
    } else {
      enforced.push(i);
    }
  }
  return shadowDenied && enforced.length > 0 ? enforced : undefined;
}

/**
 * Wraps `inner`: a consuming call whose only denials are shadow entries is followed by a second
 * call for the enforced entries, whose verdicts replace theirs. When that call cannot decide, the
 * whole check cannot. Peeks and other answers pass through.
 */
export function withShadowRecharge(inner: StoreLayer): StoreLayer {
  return {
    decide(entries, mode, options?: RechargeOptions) {
      return andThen(inner.decide(entries, mode, callOptions(options, 0)), (answer) => {
        if (mode === 'peek' || answer instanceof StoreUnavailable) return answer;
        const enforced = rechargeable(entries, answer.verdicts);
        if (enforced === undefined) return answer;
        const again = enforced.map((i) => entries[i]!);
        return andThen(inner.decide(again, mode, callOptions(options, 1)), (second) => {
          if (second instanceof StoreUnavailable) return second;
          const verdicts = answer.verdicts.slice();
          enforced.forEach((entryIndex, j) => {
            verdicts[entryIndex] = second.verdicts[j]!;
          });
          return { source: answer.source, verdicts };
        });
      });
    },
    reset: (keys) => inner.reset(keys),
  };
}
