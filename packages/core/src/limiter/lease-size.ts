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

/** Slots of a `CheckTimes` table (two arrays of 4 bytes each: 2 MB). */
const CHECK_TIME_SLOTS = 1 << 18;

/**
 * When keys without a lease were last checked, by a hash of the key: one slot per hash holding
 * the check's time and a second hash of its key, no key kept (a key seen once costs a hash and two
 * writes, and nothing for the collector to trace). A key whose slot holds another key's check is
 * taken for unseen and overwrites it: a warm key can look cold (one more exact check), a cold key
 * looks warm only when both hashes collide.
 */
export class CheckTimes {
  /** Per slot, the last check's ms since `#baseMs`, plus 1; 0 when none. */
  readonly #atMs = new Uint32Array(CHECK_TIME_SLOTS);
  /** Per slot, the second hash of the key checked then. */
  readonly #keyHash = new Uint32Array(CHECK_TIME_SLOTS);
  #baseMs: number | undefined;

  /** The last check of `key` (-Infinity when not known); records the check at `nowMs`. */
  swap(key: string, nowMs: number): number {
    const base = this.#baseMs ?? nowMs;
    this.#baseMs = base;
    const [slot, keyHash] = hashesOf(key);
    const stored = this.#keyHash[slot] === keyHash ? (this.#atMs[slot] as number) : 0;
    this.#atMs[slot] = Math.min(0xffffffff, Math.max(0, Math.floor(nowMs - base)) + 1);
    this.#keyHash[slot] = keyHash;
    return stored === 0 ? Number.NEGATIVE_INFINITY : base + stored - 1;
  }

  /** Forgets `keys` (a reset). */
  forget(keys: readonly string[]): void {
    for (const key of keys) this.#atMs[hashesOf(key)[0]] = 0;
  }
}

/** Scratch for `hashesOf`: its two results, no allocation per call. */
const HASHES: [number, number] = [0, 0];

/** The slot of `key` in a `CheckTimes` table (FNV-1a over its UTF-16 code units) and a second, independent hash. */
function hashesOf(key: string): readonly [number, number] {
  let slotHash = 0x811c9dc5;
  let keyHash = 0x9747b28c;
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    slotHash = Math.imul(slotHash ^ c, 0x01000193);
    keyHash = Math.imul(keyHash ^ c, 0x5bd1e995);
    keyHash ^= keyHash >>> 15;
  }
  HASHES[0] = (slotHash >>> 0) & (CHECK_TIME_SLOTS - 1);
  HASHES[1] = keyHash >>> 0;
  return HASHES;
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
