/** How many units a lease take asks for: the policy's `units`, or with `adaptive` a size that follows the key's use. */
import type { CompiledLease } from '../policy/lease.js';
import type { Lease } from './lease.js';

/**
 * Whether a check of a key at `nowMs` takes a lease: only once the key shows demand, that is when
 * it was checked before within the lease's `ttlMs` (`checkedAtMs`: its last check, -Infinity when
 * none is known). A cold key starts at nothing: its check is decided exactly, charged its own cost,
 * and takes no lease, so a key seen about once per `ttlMs` never strands a lease and costs what an
 * unleased check costs.
 */
export function showsDemand(policyLease: CompiledLease, checkedAtMs: number, nowMs: number): boolean {
  return nowMs - checkedAtMs <= policyLease.ttlMs;
}

/** Slots of a `CheckTimes` table (2 MB): a key seen once per `ttlMs` is rarely taken for warm below 100k keys per `ttlMs`. */
const CHECK_TIME_SLOTS = 1 << 19;

/**
 * When keys without a lease were last checked, by a hash of the key: one slot of ms per hash, no
 * key kept (a key seen once costs a hash and a write, and nothing for the collector to trace). Two
 * keys sharing a slot make a cold key look warm, so it takes a lease as a warm key would: never
 * a bound, only the cost of a take.
 */
export class CheckTimes {
  /** Per slot, the last check's ms since `#baseMs`, plus 1; 0 when none. */
  readonly #atMs = new Uint32Array(CHECK_TIME_SLOTS);
  #baseMs: number | undefined;

  /** The last check of `key` (-Infinity when not known); records the check at `nowMs`. */
  swap(key: string, nowMs: number): number {
    const base = this.#baseMs ?? nowMs;
    this.#baseMs = base;
    const slot = slotOf(key);
    const stored = this.#atMs[slot] as number;
    this.#atMs[slot] = Math.min(0xffffffff, Math.max(0, Math.floor(nowMs - base)) + 1);
    return stored === 0 ? Number.NEGATIVE_INFINITY : base + stored - 1;
  }

  /** Forgets `keys` (a reset). */
  forget(keys: readonly string[]): void {
    for (const key of keys) this.#atMs[slotOf(key)] = 0;
  }
}

/** The slot of `key` in a `CheckTimes` table: FNV-1a over its UTF-16 code units. */
function slotOf(key: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193);
  return (hash >>> 0) & (CHECK_TIME_SLOTS - 1);
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
