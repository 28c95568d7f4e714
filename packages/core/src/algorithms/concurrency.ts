import { defineAlgorithm } from './module.js';
import { type AlgorithmFn, whole } from './types.js';

/**
 * A concurrency key's slots, as lua/concurrency.lua keeps them in a sorted set: slot id -> the
 * time its lease runs out (ms by the store's clock). A slot is live while its expiry is after now.
 */
export type ConcurrencyState = ReadonlyMap<string, number>;

/** The one algorithm that holds slots instead of counting units. */
export const CONCURRENCY = 'concurrency';

/** True for a policy of the algorithm that holds slots (`algorithm: 'concurrency'`). */
export function holdsSlots(policy: { readonly algorithm?: string }): boolean {
  return policy.algorithm === CONCURRENCY;
}

/**
 * The ms past its latest slot's expiry after which a key is as good as gone (its TTL covers the
 * latest expiry + 1 ms, lua/concurrency.lua): its expired slots are no longer counted as reclaimed.
 */
const KEY_GRACE_MS = 1;

/** What a key's slots say at `now` (one pass over them). */
export interface SlotCount {
  /** Slots whose lease runs out after now. */
  readonly live: number;
  /** Expired slots a consuming check removes and counts (0 when the key is as good as gone). */
  readonly reclaimable: number;
  /** The earliest live expiry (Infinity when none). */
  readonly earliestMs: number;
  /** The latest live expiry (-Infinity when none). */
  readonly latestMs: number;
}

/** Counts the slots of `state` at `now`, as lua/concurrency.lua counts its sorted set. */
export function countSlots(state: ConcurrencyState | undefined, now: number): SlotCount {
  let live = 0;
  let expired = 0;
  let earliestMs = Number.POSITIVE_INFINITY;
  let latestMs = Number.NEGATIVE_INFINITY;
  let latestAllMs = Number.NEGATIVE_INFINITY;
  if (state !== undefined) {
    for (const expiry of state.values()) {
      if (expiry > latestAllMs) latestAllMs = expiry;
      if (expiry > now) {
        live++;
        if (expiry < earliestMs) earliestMs = expiry;
        if (expiry > latestMs) latestMs = expiry;
      } else {
        expired++;
      }
    }
  }
  const gone = now > latestAllMs + KEY_GRACE_MS;
  return { live, reclaimable: gone ? 0 : expired, earliestMs, latestMs };
}

/** The live slots of `state` at `now` (a new map). */
export function liveSlots(state: ConcurrencyState | undefined, now: number): Map<string, number> {
  const live = new Map<string, number>();
  if (state !== undefined) for (const [slot, expiry] of state) if (expiry > now) live.set(slot, expiry);
  return live;
}

/**
 * A concurrency check: allowed while fewer than `limit` slots are live; a charge adds the check's
 * slot (`slotId`) with a lease of `windowMs`. `remaining` = limit - live slots, `resetMs` = ms
 * until the last live slot runs out, `retryAfterMs` = ms until the earliest live slot runs out (at
 * least 1: an upper bound, a holder may release sooner). The cost is always 1 (one slot). Same
 * arithmetic as lua/concurrency.lua.
 */
const evaluate: AlgorithmFn<ConcurrencyState> = (state, now, { limit, windowMs, slotId }) => {
  const { live, reclaimable, earliestMs, latestMs } = countSlots(state, now);
  const allowed = live + 1 <= limit;
  const expiry = now + windowMs;
  const hasLive = live > 0;
  return {
    allowed,
    remaining: whole(limit - live, limit),
    resetMs: hasLive ? latestMs - now : 0,
    // A limit below one slot never admits (-1), as lua/concurrency.lua.
    retryAfterMs: allowed ? 0 : live === 0 ? -1 : Math.max(earliestMs - now, 1),
    chargedRemaining: whole(limit - (live + 1), limit),
    chargedResetMs: hasLive && latestMs > expiry ? latestMs - now : expiry - now,
    reclaimedSlots: reclaimable,
    charge: () => {
      if (slotId === undefined) throw new Error('store: a concurrency charge needs a "slotId"');
      const next = liveSlots(state, now);
      next.set(slotId, expiry);
      return next;
    },
  };
};

/**
 * Concurrency (lua/concurrency.lua): at most `limit` slots in flight per key, each alive for a
 * lease of `windowMs` (the policy's `leaseMs`) unless renewed, freed by `releaseSlots`. A policy
 * compiles `limit` slots and `leaseMs` to limit, windowMs = intervalMs = leaseMs. Never settled:
 * a slot is not a number of units. MemoryStore keeps the map of slots as is.
 */
export const concurrency = defineAlgorithm({
  name: CONCURRENCY,
  evaluate,
  settle: () => undefined,
  state: { kind: 'object' },
  limits: {
    burst: false,
    fractionalCosts: false,
    compile: (limit: number, leaseMs: number) => ({ limit, windowMs: leaseMs, intervalMs: leaseMs }),
  },
  store: { wholeCosts: true },
  // A denial's wait is at most the earliest slot's lease (one window); a release may come sooner.
  windows: { longestWaitWindows: 1, resetsOnBoundary: false },
  lua: {
    file: 'concurrency.lua',
    resultFields: ['slot', 'expiry', 'foreign', 'reclaimed'],
    replyFields: ['reclaimed'],
    features: ['slots'],
  },
});
