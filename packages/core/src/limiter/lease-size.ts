/** How many units a lease take asks for: the policy's `units`, or with `adaptive` a size that follows the key's use. */
import type { CompiledLease } from '../policy/lease.js';
import type { Lease } from './lease.js';

/**
 * Whether a check of a key at `nowMs` takes a lease: only once the key shows demand, that is when
 * it was checked before within the lease's `ttlMs` (`lease`: the key's entry in the lease table,
 * undefined for a key never seen). A cold key starts at nothing: its check is decided exactly,
 * charged its own cost, and takes no lease, so a key seen about once per `ttlMs` never strands a
 * lease and costs what an unleased check costs. Records the check, for the next one.
 */
export function showsDemand(policyLease: CompiledLease, lease: Lease, nowMs: number): boolean {
  const demand = nowMs - lease.checkedAtMs <= policyLease.ttlMs;
  lease.checkedAtMs = nowMs;
  return demand;
}

/** An adaptive lease's first size (units), and its size again after a denied take. */
export const ADAPTIVE_FIRST_UNITS = 1;

/**
 * The units the next take of `lease` asks for at `nowMs` (before the request's own need is added).
 * A fixed lease asks for `units` every time. An adaptive one starts at {@link ADAPTIVE_FIRST_UNITS}
 * and, at each take, doubles (up to `units`) when the lease before was spent within half its TTL,
 * halves when the lease before expired with units unspent, and keeps its size otherwise; a denied
 * take sets it back to the first size (see {@link shrinkAfterDenial}). So a hot key soon takes
 * whole leases, and a key seen now and then holds about what it uses.
 */
export function takeUnits(policyLease: CompiledLease, lease: Lease, nowMs: number): number {
  if (!policyLease.adaptive) return policyLease.units;
  let size = lease.sizeUnits;
  if (lease.generation > 0) {
    // A lease was taken before: how it was spent sizes the next.
    const expired = nowMs >= lease.expiresAtMs;
    if (expired && lease.units >= 1) size = Math.max(ADAPTIVE_FIRST_UNITS, Math.floor(size / 2));
    else if (!expired && nowMs - lease.seenAtMs <= policyLease.ttlMs / 2) size *= 2;
  }
  size = Math.min(policyLease.units, size);
  lease.sizeUnits = size;
  return size;
}

/** After a denied take: an adaptive lease starts again from its first size. */
export function shrinkAfterDenial(lease: Lease): void {
  lease.sizeUnits = ADAPTIVE_FIRST_UNITS;
}
