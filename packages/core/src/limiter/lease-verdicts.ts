/** The arithmetic of leases: what a take asks for, what it leaves in the lease, and the verdicts a lease gives. */
import { ALGORITHMS } from '../algorithms/registry.js';
import type { CompiledPolicy, StoreEntry, StoreVerdict } from '../types.js';
import type { LimiterCounters } from './counters.js';
import type { Denial, DenialMemory } from './denial-memory.js';
import { shrinkAfterDenial } from './lease-size.js';
import type { Lease } from './lease-table.js';

/**
 * Gives `units` held out of a lease back to it (`heldFrom`: its generation when they were held);
 * a lease taken since (or dropped) does not get them: they are counted dropped.
 */
export function giveBack(
  units: number,
  lease: Lease,
  heldFrom: number | undefined,
  counters?: LimiterCounters,
): void {
  if (heldFrom === undefined || units <= 0) return;
  if (lease.generation === heldFrom) lease.units += units;
  else if (counters !== undefined) counters.leases.dropped += units;
}

/** Slack for comparing units (fractional costs). */
const EPS = 1e-9;

/**
 * The units of `lease` a take may count on at `nowMs`: the live units, or none when the lease
 * expired, or when the store is failing and the policy does not fail `'lease'` (such a policy
 * stops spending its lease while the store is in trouble; the units are dropped at the next take).
 */
export function usableUnits(entry: StoreEntry, lease: Lease, nowMs: number, failing: boolean): number {
  if (nowMs >= lease.expiresAtMs) return 0;
  if (failing && entry.policy.failMode !== 'lease') return 0;
  return lease.units;
}

/** The least a take must get for the request to pass: its cost less the usable units (whole for whole-cost algorithms). */
export function leastUnitsOf(entry: StoreEntry, usable: number): number {
  const short = entry.cost - usable;
  if (ALGORITHMS[entry.policy.algorithm].store.wholeCosts) return Math.max(1, Math.ceil(short - EPS));
  return short > EPS ? short : entry.cost;
}

/** Whether a denied take's wait can be remembered: a positive wait, not "never", not a ban. */
export function rememberable(verdict: StoreVerdict): boolean {
  return !verdict.allowed && verdict.banned !== true && verdict.retryAfterMs > 0;
}

/** A take's request and answer: the entry, what was asked of the store, and what it said. */
export interface TakeAnswer {
  readonly entry: StoreEntry;
  readonly take: StoreEntry;
  /** The lease units the take counted on (held out of the lease while it was out). */
  readonly usable: number;
  /** The lease's generation when the take was sent. */
  readonly generation: number;
  readonly verdict: StoreVerdict;
  /** Whether the store charged the check (every enforced policy admitted). */
  readonly charged: boolean;
  readonly askedAtMs: number;
}

/**
 * Applies a take's answer to `lease`: a charged take (`chargedUnits`, or the whole take from a
 * store that does not report it) becomes the lease, less the request's own cost, for `ttlMs`
 * (and no longer than the window for algorithms whose quota returns on a boundary: a fixed
 * window's lease ends with its window), and the key's remembered denial is forgotten. When another
 * take of the key was granted while this one was out (several takes in flight), the two add up and
 * the lease ends at the earlier of their ends, so no unit is spent later than its own take allows;
 * otherwise what was left of the lease before (expired, or unusable while the store failed) is
 * dropped. A denied take gives the units it counted on back and goes to `denials` (kept by their
 * rule: until its wait is over, at most their `maxAgeMs`), and an adaptive lease starts again
 * small. Returns the units granted (0 for a denied take) and the units dropped.
 */
export function settleTake(
  lease: Lease,
  denials: DenialMemory,
  answer: TakeAnswer,
): { granted: number; dropped: number } {
  const { entry, take, usable, generation, verdict, charged, askedAtMs } = answer;
  const granted = verdict.chargedUnits ?? (charged && verdict.allowed ? take.cost : 0);
  const sinceGranted = lease.generation !== generation;
  if (granted > 0) {
    const { policy } = entry;
    const ttlMs = (policy.lease as { ttlMs: number }).ttlMs;
    const endsWithWindow = ALGORITHMS[policy.algorithm].windows.resetsOnBoundary;
    const expiresAtMs = askedAtMs + (endsWithWindow ? Math.min(ttlMs, verdict.resetMs) : ttlMs);
    const dropped = sinceGranted ? 0 : Math.max(0, lease.units);
    const before = sinceGranted ? lease.units : 0;
    lease.units = Math.max(0, before + usable + granted - entry.cost);
    lease.expiresAtMs = sinceGranted ? Math.min(lease.expiresAtMs, expiresAtMs) : expiresAtMs;
    lease.seenRemaining = verdict.remaining;
    lease.seenResetMs = verdict.resetMs;
    lease.seenAtMs = askedAtMs;
    lease.generation += 1;
    denials.forget([entry.key]);
    return { granted, dropped };
  }
  giveBack(usable, lease, generation);
  if (rememberable(verdict)) {
    denials.remember(
      entry.key,
      take.leastCost ?? take.cost,
      askedAtMs,
      askedAtMs + verdict.retryAfterMs,
      verdict,
    );
    shrinkAfterDenial(lease);
  }
  return { granted: 0, dropped: sinceGranted ? usable : 0 };
}

/** Whole units a client is told are left: the store's as last seen plus the live lease, at most the limit. */
function remainingOf(policy: CompiledPolicy, seenRemaining: number, leaseUnits: number): number {
  return Math.min(policy.limit, Math.max(0, Math.floor(seenRemaining + leaseUnits + EPS)));
}

/** The take's verdict as the request sees it: the store's remaining plus what the lease now holds. */
export function remainingView(policy: CompiledPolicy, lease: Lease, verdict: StoreVerdict): StoreVerdict {
  return {
    allowed: verdict.allowed,
    remaining: remainingOf(policy, verdict.remaining, lease.units),
    resetMs: verdict.resetMs,
    retryAfterMs: verdict.retryAfterMs,
    ...(verdict.banned === true && { banned: true as const }),
  };
}

/** The verdict of an entry admitted from its lease: remaining as last seen plus the lease, resetMs counted down. */
export function leaseVerdict(policy: CompiledPolicy, lease: Lease, nowMs: number): StoreVerdict {
  return {
    allowed: true,
    remaining: remainingOf(policy, lease.seenRemaining, lease.units),
    resetMs: Math.max(0, Math.ceil(lease.seenResetMs - (nowMs - lease.seenAtMs))),
    retryAfterMs: 0,
  };
}

/** A remembered denial of a take, its waits counted down. */
export function deniedVerdict(denial: Denial, nowMs: number): StoreVerdict {
  return {
    allowed: false,
    remaining: denial.remaining,
    resetMs: Math.max(0, Math.ceil(denial.resetMs - (nowMs - denial.atMs))),
    retryAfterMs: Math.max(1, Math.ceil(denial.untilMs - nowMs)),
  };
}
