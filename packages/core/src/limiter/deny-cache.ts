/**
 * The local deny cache: after the store denied a key of a check until T, a check holding that key
 * with the same or a higher cost on it is denied in-process until T, without a store call.
 *
 * It remembers per key, in the limiter's one memory of denials (`DenialMemory`, shared with the
 * leases and the local stage): what the store said of each key of a denied check, its wait, when.
 * It never admits anything (a miss goes to the store) and it only denies what the store is certain
 * to deny: a denied request consumed nothing, other clients can only use up capacity, and the
 * store's `retryAfterMs` is the earliest moment the denying key could admit that cost. Only an
 * enforcing (non-shadow) denial answers a check, and only when every key of the check is
 * remembered (the other policies' results come from what the store last said of their keys).
 * A concurrency policy's keys are never remembered, by this step or any other (`remembersKeysOf`):
 * a check holding one always goes to the store.
 *
 * Two bounds keep a remembered denial honest. A wait is never taken as longer than the policy's
 * longest possible wait (state written by another algorithm, or a clock that went backwards,
 * must not turn into a denial of hours); a ban's wait is the store's, the rest of its block. And a
 * denied check's keys are remembered by the rule every in-process memory of a denial keeps
 * (`rememberedUntilMs`): until its latest wait, at most `maxAgeMs` (default 1 s), so after a reset
 * on another instance every instance is back at the store within `maxAgeMs`. A denial answered
 * from here tells the store's own wait counted down: a client that waits it is past the moment the
 * store admits.
 */

import { ALGORITHMS } from '../algorithms/registry.js';
import type { Algorithm, CompiledPolicy, PolicyResult, StoreEntry, StoreVerdict } from '../types.js';
import { resultFromVerdict } from './decision.js';
import { type Denial, type DenialMemory, rememberedUntilMs, remembersKeysOf } from './denial-memory.js';

/**
 * The longest wait a policy can ask for, in ms: its algorithm's `longestWaitWindows` windows
 * (a window for the fixed window and the sliding log; two for the sliding window counter, whose
 * previous window still weighs during the current one, and for the token bucket and GCRA, a full
 * refill and the repaying of a settle's debt of one limit).
 */
export function longestWaitMs(algorithm: Algorithm, windowMs: number): number {
  return Math.ceil(ALGORITHMS[algorithm].windows.longestWaitWindows * windowMs);
}

/** A denial's wait as the deny cache believes it (ms): the store's, at most the policy's longest unless banned. */
function believedWaitMs(policy: CompiledPolicy, retryAfterMs: number, banned: boolean): number {
  // A ban's wait is the rest of its block, which the store keeps apart from the policy's state.
  return banned ? retryAfterMs : Math.min(retryAfterMs, longestWaitMs(policy.algorithm, policy.windowMs));
}

/**
 * Until when the deny cache denies from `denial` (ms, exclusive): the end of the believed wait less
 * 1 ms, so the rounding of waits to whole ms never extends a denial past the moment the store admits.
 */
function deniedUntilMs(policy: CompiledPolicy, denial: Denial): number {
  const waitMs = believedWaitMs(policy, denial.untilMs - denial.atMs, denial.banned);
  return denial.atMs + waitMs - 1;
}

/**
 * Remembers a check the store answered with `verdicts` (in entry order) at `atMs`: each key's
 * verdict, kept until the check's latest enforced denial ends (at most `maxAgeMs`). Returns
 * whether anything was remembered: a check with no enforced denial of more than 1 ms is not.
 */
export function rememberDenied(
  memory: DenialMemory,
  entries: readonly StoreEntry[],
  verdicts: readonly StoreVerdict[],
  atMs: number,
): boolean {
  let latestMs = 0;
  for (let i = 0; i < entries.length; i++) {
    const { policy } = entries[i] as StoreEntry;
    const verdict = verdicts[i] as StoreVerdict;
    // Waits are told in whole ms, rounded up, as a result reports them.
    const retryAfterMs = Math.ceil(verdict.retryAfterMs);
    if (policy.shadow || verdict.allowed || !(retryAfterMs > 1) || !remembersKeysOf(policy)) continue;
    const untilMs = atMs + believedWaitMs(policy, retryAfterMs, verdict.banned === true) - 1;
    if (untilMs > latestMs) latestMs = untilMs;
  }
  if (rememberedUntilMs(atMs, latestMs, memory.maxAgeMs) <= atMs) return false;
  for (let i = 0; i < entries.length; i++) {
    const { key, policy, cost } = entries[i] as StoreEntry;
    if (!remembersKeysOf(policy)) continue;
    const verdict = verdicts[i] as StoreVerdict;
    const retryAfterMs = Math.ceil(verdict.retryAfterMs);
    if (!policy.shadow && !verdict.allowed && retryAfterMs > 1) {
      const untilMs = atMs + believedWaitMs(policy, retryAfterMs, verdict.banned === true);
      memory.remember(key, cost, atMs, untilMs, verdict, latestMs);
    } else memory.rememberVerdict(key, cost, atMs, verdict, latestMs);
  }
  return true;
}

/**
 * The results to answer a check with when the memory is certain the store denies it at `nowMs`,
 * else undefined (a key of the check not remembered, or no enforced denial still holding for its
 * cost). Every wait and reset is counted down from the moment its key was remembered; a denied
 * entry tells the store's wait, counted down; an enforced entry whose wait is over (or whose cost
 * is lower than the one denied) might fit now, so it reads allowed.
 */
export function deniedFromMemory(
  memory: DenialMemory,
  entries: readonly StoreEntry[],
  nowMs: number,
): PolicyResult[] | undefined {
  let denied = false;
  const seenOf = SEEN;
  const untilOf = DENIED_UNTIL_MS;
  for (let i = 0; i < entries.length; i++) {
    const { key, policy, cost } = entries[i] as StoreEntry;
    const seen = memory.seen(key, nowMs);
    if (seen === undefined) return undefined;
    const untilMs = deniesAtMs(policy, cost, seen, nowMs);
    seenOf[i] = seen;
    untilOf[i] = untilMs;
    if (untilMs !== NO_DENIAL) denied = true;
  }
  if (!denied) return undefined;
  const results: PolicyResult[] = [];
  for (let i = 0; i < entries.length; i++) {
    const { policy, cost } = entries[i] as StoreEntry;
    results.push(resultAt(policy, cost, seenOf[i] as Denial, untilOf[i] as number, nowMs));
    seenOf[i] = undefined;
  }
  return results;
}

/** What `deniedFromMemory` found of each key, and until when it denies, between its two passes (it never awaits). */
const SEEN: (Denial | undefined)[] = [];
const DENIED_UNTIL_MS: number[] = [];

/** `deniesAtMs` of a key that does not deny. */
const NO_DENIAL = Number.NEGATIVE_INFINITY;

/** Until when `seen` denies an enforced `policy`'s `cost` for certain (ms, exclusive), or `NO_DENIAL` at `nowMs`. */
function deniesAtMs(policy: CompiledPolicy, cost: number, seen: Denial, nowMs: number): number {
  if (policy.shadow || !seen.certain || seen.allowed || cost < seen.units) return NO_DENIAL;
  const untilMs = deniedUntilMs(policy, seen);
  return untilMs > nowMs ? untilMs : NO_DENIAL;
}

/** One entry's result from what was seen of its key, counted down to `nowMs`; `deniedUntil` from `deniesAtMs`. */
function resultAt(
  policy: CompiledPolicy,
  cost: number,
  seen: Denial,
  deniedUntil: number,
  nowMs: number,
): PolicyResult {
  const elapsedMs = nowMs - seen.atMs;
  // A Denial holds every field of a verdict (`banned` as a boolean, which the result reads as such).
  const verdict = seen as unknown as StoreVerdict;
  const result = resultFromVerdict(policy, cost, verdict) as {
    -readonly [F in keyof PolicyResult]: PolicyResult[F];
  };
  result.resetMs = Math.max(0, result.resetMs - elapsedMs);
  if (deniedUntil !== NO_DENIAL) {
    // The store's wait (until the 1 ms taken off for rounding), counted down.
    result.retryAfterMs = deniedUntil + 1 - nowMs;
  } else if (!result.allowed && !policy.shadow) {
    // This entry's wait is over (or the cost is lower): the store might admit it now.
    result.allowed = true;
    result.outcome = 'allowed';
    result.retryAfterMs = 0;
  } else result.retryAfterMs = Math.max(0, result.retryAfterMs - elapsedMs);
  return result;
}
