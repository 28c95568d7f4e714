/**
 * MemoryStore's bans (`policy.ban`): per ban key, blocked until a time and the denials counted
 * in the current violation window. The same rules as the decide script (lua/decide.lua): a ban
 * is read before the policy's state is charged, and a denial of a policy with a ban writes one.
 */
import { banKeyOf } from '../keys/build-keys.js';
import type { CompiledBan, StoreVerdict } from '../types.js';

/** One ban key's state. */
export interface BanState {
  /** Denied while the clock is before this. */
  readonly untilMs: number;
  /** Denials counted since `windowStartMs`. */
  readonly violations: number;
  /** When the current violation window began. */
  readonly windowStartMs: number;
  /** After this the state is equivalent to none: the key's TTL, as the script sets it. */
  readonly expiresAtMs: number;
}

/** Same ceiling as lua/decide.lua MAX_TTL_MS. */
const MAX_TTL_MS = 1e15;

/**
 * The state a denial at `nowMs` writes, from the state before it (`undefined`: none): the
 * violation is counted in the current window (a new one starts once `violationWindowMs` has
 * passed since the window began), and the block is `escalatedBlockMs` from the
 * `violations`-th denial of a window on, `blockMs` before. TTL: until the later of the block's
 * end and the window's end, rounded up, plus 1 ms.
 */
export function banAfterDenial(ban: CompiledBan, before: BanState | undefined, nowMs: number): BanState {
  let violations = 1;
  let windowStartMs = nowMs;
  if (before !== undefined && nowMs - before.windowStartMs < ban.violationWindowMs) {
    violations = before.violations + 1;
    windowStartMs = before.windowStartMs;
  }
  const blockMs = ban.violations > 0 && violations >= ban.violations ? ban.escalatedBlockMs : ban.blockMs;
  const untilMs = nowMs + blockMs;
  let lastMs = untilMs;
  if (ban.violations > 0 && windowStartMs + ban.violationWindowMs > lastMs) {
    lastMs = windowStartMs + ban.violationWindowMs;
  }
  let ttlMs = Math.ceil(lastMs - nowMs) + 1;
  if (ttlMs > MAX_TTL_MS) ttlMs = MAX_TTL_MS;
  return { untilMs, violations, windowStartMs, expiresAtMs: nowMs + ttlMs };
}

/**
 * Ban states by key, at most `maxKeys` (the oldest written goes first). A state is kept past its
 * expiry until swept (on writes, the two oldest are checked): an expired state decides exactly
 * like none (its block is over and its violation window too), so only memory depends on the sweep.
 */
export class BanTable {
  readonly #states = new Map<string, BanState>();

  constructor(private readonly maxKeys: number) {}

  /** Number of ban keys held. */
  get size(): number {
    return this.#states.size;
  }

  /** The state of `key`, or undefined. */
  read(key: string): BanState | undefined {
    return this.#states.get(key);
  }

  /** Writes `state` under `key`, newest last; sweeps expired states and keeps at most `maxKeys`. */
  write(key: string, state: BanState, nowMs: number): void {
    const states = this.#states;
    states.delete(key);
    let checked = 0;
    for (const [oldKey, old] of states) {
      if (checked++ >= 2 || nowMs <= old.expiresAtMs) break;
      states.delete(oldKey);
    }
    if (states.size >= this.maxKeys) {
      const oldest = states.keys().next();
      if (oldest.done !== true) states.delete(oldest.value);
    }
    states.set(key, state);
  }

  /** Forgets `key`. */
  delete(key: string): void {
    this.#states.delete(key);
  }

  /** Forgets every state. */
  clear(): void {
    this.#states.clear();
  }
}

/** The end of the ban in force on the entry whose policy key is `key`, or 0 when none is. */
export function banInForce(bans: BanTable, key: string, nowMs: number): number {
  const state = bans.read(banKeyOf(key));
  return state !== undefined && nowMs < state.untilMs ? state.untilMs : 0;
}

/**
 * The verdict of an entry whose policy has a ban: banned while a ban is in force (`untilMs`, 0
 * for none), and a denial in mode 'consume' starts one (counting the violation), as the decide
 * script does. `retryAfterMs` is then the rest of the block, or the policy's own wait when
 * longer (-1, never, stays). A banned entry is never charged (the caller saw it deny).
 */
export function banVerdict(
  bans: BanTable,
  key: string,
  ban: CompiledBan,
  verdict: StoreVerdict,
  untilMs: number,
  consume: boolean,
  nowMs: number,
): StoreVerdict {
  let end = untilMs;
  if (end === 0) {
    if (verdict.allowed || !consume) return verdict;
    const banKey = banKeyOf(key);
    const state = banAfterDenial(ban, bans.read(banKey), nowMs);
    bans.write(banKey, state, nowMs);
    end = state.untilMs;
  }
  // Half a microsecond off first, as the script does: the rounding error of end - nowMs never adds a millisecond.
  const restMs = Math.ceil(end - nowMs - 0.0005);
  const { retryAfterMs } = verdict;
  return {
    allowed: false,
    remaining: verdict.remaining,
    resetMs: verdict.resetMs,
    retryAfterMs: retryAfterMs === -1 || retryAfterMs > restMs ? retryAfterMs : restMs,
    banned: true,
  };
}
