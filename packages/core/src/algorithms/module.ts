/**
 * The shape of one algorithm module: everything Sluice knows about an algorithm, in one place
 * (its name, MemoryStore state codec, evaluation, policy and store rules, and the facts of its
 * Lua twin in lua/). registry.ts lists the modules; everything else reads the registry.
 */
import type { AlgorithmFn, SettleFn } from './types.js';

/** Most numbers a `'numbers'` codec keeps per key in MemoryStore's table. */
export const STATE_NUMBERS_MAX = 3;

/**
 * How MemoryStore keeps an algorithm's state (the Redis state format is the Lua file's own).
 * `'numbers'`: up to `STATE_NUMBERS_MAX` numbers in the table's Float64Array, no object per
 * key; `'object'`: the state object itself, held as `evaluate`'s `charge()` returned it.
 */
export type StateCodec<S> =
  | {
      readonly kind: 'numbers';
      /** The state from the numbers at `numbers[at]`, `numbers[at + 1]`, ... */
      decode(numbers: Float64Array, at: number): S;
      /** Writes `state` as numbers from `numbers[at]` on (at most `STATE_NUMBERS_MAX`). */
      encode(state: S, numbers: Float64Array, at: number): void;
    }
  | { readonly kind: 'object' };

/** The compiled numbers of a policy (see `CompiledPolicy`). */
export interface CompiledLimits {
  /** Quota: units per window, or bucket capacity. */
  readonly limit: number;
  /** Window length in ms (for a bucket: the time from empty to full). */
  readonly windowMs: number;
  /** Ms to earn back one unit. */
  readonly intervalMs: number;
}

/** A cap on a policy's `limit`, with the reason and the algorithm to use beyond it. */
export interface PolicyLimitCap {
  /** Largest `limit` (units per window). */
  readonly units: number;
  /** Why, as a clause for the error message. */
  readonly reason: string;
  /** The algorithm to use for larger quotas. */
  readonly instead: string;
}

/** How `definePolicy` checks and compiles a policy of this algorithm. */
export interface LimitRules {
  /** The policy takes a `burst` (its capacity) beside its rate; otherwise `limit` units per `window`. */
  readonly burst: boolean;
  /** A policy's costs may be fractions; otherwise whole numbers. */
  readonly fractionalCosts: boolean;
  /** The compiled numbers for a rate of `rateLimit` units per `rateWindowMs` and `burst` (undefined: unset). */
  compile(rateLimit: number, rateWindowMs: number, burst: number | undefined): CompiledLimits;
  /** Largest `limit` a policy may have; undefined: no cap. */
  readonly maxLimit?: PolicyLimitCap;
}

/** What a store (MemoryStore, and the decide script for Redis) accepts for this algorithm. */
export interface StoreRules {
  /** Costs must be whole numbers (the arithmetic counts whole units). */
  readonly wholeCosts: boolean;
  /** Largest `limit` the arithmetic keeps exact; undefined: no cap. */
  readonly maxLimit?: number;
}

/** How the algorithm's waits and resets relate to its window (read by the deny cache and the headers). */
export interface WindowFacts {
  /**
   * The longest a denied request can be told to wait, in windows (`windowMs`): 2 for a sliding
   * window (the previous window's weight lasts a whole window more) and for the token bucket and
   * GCRA (a settle's debt of one limit takes a whole refill more to repay), 1 where the quota
   * comes back when the window or the record ends whatever was charged (fixed window, sliding log).
   * Reserved turns (`maxWaitMs`) queue beyond it: a waiting policy's store may tell a wait of up to
   * this plus its `maxWaitMs` (and a deny cache that holds this as the longest denies less long).
   */
  readonly longestWaitWindows: 1 | 2;
  /** The quota comes back at once on a window boundary (epoch-aligned windows), not gradually. */
  readonly resetsOnBoundary: boolean;
}

/** The algorithm's Lua twin, read by packages/core/scripts/embed-lua.mjs. */
export interface LuaFacts {
  /** Its file in lua/; it registers `ALGORITHMS['<name>']` (see lua/common.lua). */
  readonly file: string;
  /**
   * The fields of the decide script's result table it sets besides `LUA_COMMON_RESULT_FIELDS`
   * (the script allocates every field up front, so a table never grows while filled).
   */
  readonly resultFields: readonly string[];
  /** Of those, the ones lua/decide.lua reads into a fifth reply item (a concurrency entry's `reclaimed`). */
  readonly replyFields?: readonly string[];
  /**
   * The decide features (packages/core/scripts/lua-shapes.mjs: 'slots', ...) its entries use, so
   * every shape of the decide script that holds it carries them (a concurrency entry: 'slots').
   */
  readonly features?: readonly string[];
}

/** Result table fields every Lua algorithm sets and lua/decide.lua reads (see lua/common.lua). */
export const LUA_COMMON_RESULT_FIELDS: readonly string[] = Object.freeze([
  'allowed',
  'remaining',
  'resetMs',
  'retryAfterMs',
  'chargedRemaining',
  'chargedResetMs',
  'key',
  'write',
]);

/** One algorithm, all of it: see the fields. `S` is its state. */
export interface AlgorithmModule<N extends string = string, S = unknown> {
  /** The name policies give (`algorithm: 'token-bucket'`), the decide script's too. */
  readonly name: N;
  /** The decision, a pure function of state, time and policy numbers (its Lua twin's arithmetic). */
  readonly evaluate: AlgorithmFn<S>;
  /** The settle of a reservation: charge or refund the difference (its Lua twin's `SETTLES[name]`). */
  readonly settle: SettleFn<S>;
  /**
   * Waiting (an entry's `maxWaitMs`): the state an entry that reserves a future turn stores, from
   * the state `evaluate`'s `charge()` returned for it (charged beyond what is there): the debt kept
   * as time (a bucket empty, or GCRA's burst full, until the turn), which no read clamps or
   * forgives. Its Lua twin is `RESERVES[name]`. Unset: the algorithm cannot wait (a store refuses
   * `maxWaitMs` for it).
   */
  readonly reserve?: (charged: S, limits: CompiledLimits) => S;
  /** How MemoryStore keeps its state. */
  readonly state: StateCodec<S>;
  /** How a policy of it is checked and compiled. */
  readonly limits: LimitRules;
  /** What a store accepts for it. */
  readonly store: StoreRules;
  /** Its waits and resets against its window. */
  readonly windows: WindowFacts;
  /** Its Lua twin. */
  readonly lua: LuaFacts;
}

/** Declares an algorithm module, keeping its name as a literal type (for the `Algorithm` union). */
export function defineAlgorithm<const N extends string, S>(
  module: AlgorithmModule<N, S>,
): AlgorithmModule<N, S> {
  return Object.freeze(module);
}
