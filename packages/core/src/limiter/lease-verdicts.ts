/** The arithmetic of leases: what a take asks for, what it leaves in the lease, and the verdicts a lease gives. */
import { ALGORITHMS } from '../algorithms/registry.js';
import type { CompiledPolicy, StoreEntry, StoreVerdict } from '../types.js';
import type { LimiterCounters } from './counters.js';
import type { Denial, DenialMemory } from './denial-memory.js';
import { shrinkAfterDenial } from './lease-size.js';
import type { Lease } from './lease-table.js';

/**
 * Gives held units back to the lease they came from (`heldFrom`, its generation when they were
 * held); a lease taken since (or dropped) does not get them: they are counted dropped.
 */
export function giveBack(
  entry: StoreEntry,
  lease: Lease,
  heldFrom: number | undefined,
  counters?: LimiterCounters,
): void {
  if (heldFrom !== undefined && lease.generation === heldFrom) lease.units += entry.cost;
  else if (heldFrom !== undefined && counters !== undefined) counters.leases.dropped += entry.cost;
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
  /** The lease units the take counted on. */
  readonly usable: number;
  readonly verdict: StoreVerdict;
  /** Whether the store charged the check (every enforced policy admitted). */
  readonly charged: boolean;
  readonly askedAtMs: number;
}

/**
 * Applies a take's answer to `lease`: a charged take (`chargedUnits`, or the whole take from a
 * store that does not report it) becomes the lease, less the request's own cost, for `ttlMs`
 * (and no longer than the window for algorithms whose quota returns on a boundary: a fixed
 * window's lease ends with its window), and the key's remembered denial is forgotten; a denied
 * one goes to `denials` (kept by their rule: until its wait is over, at most their `maxAgeMs`),
 * and an adaptive lease starts again small. Returns the units granted (0 for a denied take).
 */
export function settleTake(lease: Lease, denials: DenialMemory, answer: TakeAnswer): number {
  const { entry, take, usable, verdict, charged, askedAtMs } = answer;
  const granted = verdict.chargedUnits ?? (charged && verdict.allowed ? take.cost : 0);
  if (granted > 0) {
    const { policy } = entry;
    const ttlMs = (policy.lease as { ttlMs: number }).ttlMs;
    const endsWithWindow = ALGORITHMS[policy.algorithm].windows.resetsOnBoundary;
    lease.units = Math.max(0, usable + granted - entry.cost);
    lease.expiresAtMs = askedAtMs + (endsWithWindow ? Math.min(ttlMs, verdict.resetMs) : ttlMs);
    lease.seenRemaining = verdict.remaining;
    lease.seenResetMs = verdict.resetMs;
    lease.seenAtMs = askedAtMs;
    lease.generation += 1;
    denials.forget([entry.key]);
  } else if (rememberable(verdict)) {
    denials.remember(
      entry.key,
      take.leastCost ?? take.cost,
      askedAtMs,
      askedAtMs + verdict.retryAfterMs,
      verdict,
    );
    shrinkAfterDenial(lease);
  }
  return granted;
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
