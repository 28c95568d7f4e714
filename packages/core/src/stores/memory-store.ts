/**
 * MemoryStore: the algorithms in TypeScript, in one process. Decides exactly like the
 * Redis decide script for the same entries and clock (same arithmetic, same TTLs).
 *
 * Memory is bounded without timers: a key's state expires lazily (checked on access, and
 * the least recently used keys are inspected on every write), and at most `maxKeys` keys
 * are held; beyond that the least recently used key is dropped (expired keys go first,
 * as they sit at the old end). Dropping a live key forgets its usage (that identity starts
 * with a full quota again; `liveEvictions` counts it), so size `maxKeys` for the number of
 * identities you expect to be active at once. The recency order is a linked list in typed
 * arrays (see lru-index.ts), so a check costs the same however many keys were evicted before.
 * States live in one Float64Array (see memory-store-table.ts): about 220 bytes of heap per
 * key, a 25-character key included (measured by memory-store.test.ts).
 */
import { ALGORITHMS, type AlgorithmParams, type Evaluation, holdsSlots } from '../algorithms/index.js';
import { leaseTake } from '../algorithms/lease-take.js';
import { reservedWaitMs, wholeWaitMs } from '../algorithms/types.js';
import { assertValidEntries } from '../algorithms/validate.js';
import type { SlotRef } from '../model/store.js';
import { OPTION_DEFAULTS } from '../options/defaults.js';
import type { Clock, Store, StoreEntry, StoreMode, StoreSettleEntry, StoreVerdict } from '../types.js';
import { chargesEntry } from './charge-rule.js';
import { BanTable, banInForce, banVerdict } from './memory-bans.js';
import { checkRecordOptions, type MemoryStoreCheckOptions, RequestRecords } from './memory-records.js';
import { reclaimSlots, releaseInTable, renewInTable, replaySlots } from './memory-slots.js';
import { settleInTable } from './memory-store-settle.js';
import { StateTable } from './memory-store-table.js';

/** Options of `MemoryStore`. */
export interface MemoryStoreOptions {
  /** Milliseconds since the epoch; `Date.now` when unset. Inject one in tests. */
  readonly clock?: Clock;
  /**
   * Most keys held at once (default 1_000_000); the least recently used goes first. Evicting a
   * key whose state is still live forgets its usage: that identity's next request sees a full
   * quota. Size it above the identities active at once; `liveEvictions` (and the metric
   * `sluice_live_key_evictions_total`) counts the keys dropped while live.
   */
  readonly maxKeys?: number;
}

export type { MemoryStoreCheckOptions } from './memory-records.js';

/** Same ceiling as lua/decide.lua MAX_TTL_MS. */
const MAX_TTL_MS = 1e15;

/** An in-process `Store`: one process, bounded memory, identical decisions to `RedisStore`. */
export class MemoryStore implements Store {
  /** Identifies the store kind in events and logs. */
  readonly kind = 'memory';
  readonly #clock: Clock;
  readonly #table: StateTable;
  readonly #maxKeys: number;
  /** Request records, least recently written first; bounded by maxKeys. */
  readonly #records: RequestRecords;
  /** Ban states (`policy.ban`), by ban key; built at the first policy with a ban. */
  #bans: BanTable | undefined;

  constructor(options: MemoryStoreOptions = {}) {
    const maxKeys = options.maxKeys ?? OPTION_DEFAULTS.memoryStoreMaxKeys;
    if (!Number.isInteger(maxKeys) || maxKeys < 1) {
      throw new Error(`MemoryStore: "maxKeys" must be a positive integer, got ${String(options.maxKeys)}`);
    }
    if (options.clock !== undefined && typeof options.clock !== 'function') {
      throw new Error(`MemoryStore: "clock" must be a function, got ${typeof options.clock}`);
    }
    this.#clock = options.clock ?? Date.now;
    this.#table = new StateTable(maxKeys);
    this.#maxKeys = maxKeys;
    this.#records = new RequestRecords(maxKeys);
  }

  /** Number of keys held now (expired keys not yet swept included). */
  get size(): number {
    return this.#table.size;
  }

  /** Keys dropped to make room while their state was still live: usage forgotten. */
  get liveEvictions(): number {
    return this.#table.liveEvictions;
  }

  /** Slots the state table's recency list visited so far (for tests counting work per check). */
  get visitedSlots(): number {
    return this.#table.visitedSlots;
  }

  /**
   * Decide every entry at once: the enforced entries are charged when every enforced entry allows,
   * the shadow ones when every entry allows (as the decide script). Never rejects for valid entries.
   */
  decide(
    entries: readonly StoreEntry[],
    mode: StoreMode,
    options?: MemoryStoreCheckOptions,
  ): Promise<StoreVerdict[]> {
    try {
      return Promise.resolve(this.decideSync(entries, mode, options));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * The synchronous form of `decide`: phase 1 evaluates every entry; phase 2, in mode
   * `'consume'`, charges the enforced entries when every enforced entry allows and the shadow
   * entries (`policy.shadow`) when every entry allows. So a deny of shadow entries only charges
   * the enforced ones, an enforced deny charges nothing.
   */
  decideSync(
    entries: readonly StoreEntry[],
    mode: StoreMode,
    options?: MemoryStoreCheckOptions,
  ): StoreVerdict[] {
    assertValidEntries(entries, mode);
    if (mode !== 'consume' && mode !== 'peek') throw new Error(`MemoryStore: unknown mode ${String(mode)}`);
    const requestKey = options?.requestKey;
    const requestTtlMs = options?.requestTtlMs;
    checkRecordOptions(requestKey, requestTtlMs);
    const now = this.#now();

    let recordKey = mode === 'consume' ? requestKey : undefined;
    if (recordKey !== undefined) {
      const replayed = this.#records.replay(recordKey, now, entries.length);
      if (replayed === 'other')
        recordKey = undefined; // recorded for another set of entries: left alone
      // A replay takes slots of its own where the recorded decision took some.
      else if (replayed !== undefined) return replaySlots(this.#table, entries, replayed, now);
    }

    const consume = mode === 'consume';
    const evaluations: Evaluation<unknown>[] = new Array(entries.length);
    let waits: number[] | undefined; // per entry that reserves a future turn: its wait (ms)
    let takes: number[] | undefined; // per lease take (`leastCost`): the units it charges if charged
    // Per entry of a policy with a ban: the end of its ban now in force, or 0 (undefined: no ban).
    let bannedUntil: number[] | undefined;
    let all = true; // every entry allows
    let enforced = true; // every enforced entry allows
    for (let i = 0; i < entries.length; i++) {
      const { key, policy, cost, leastCost, slotId, maxWaitMs } = entries[i] as StoreEntry;
      const params: AlgorithmParams = {
        limit: policy.limit,
        windowMs: policy.windowMs,
        intervalMs: policy.intervalMs,
        cost,
        slotId,
      };
      const state = this.#table.read(key, policy.algorithm, now);
      let e = ALGORITHMS[policy.algorithm].evaluate(state, now, params);
      if (leastCost !== undefined) {
        const take = e.allowed
          ? { evaluation: e, units: cost }
          : leaseTake(policy.algorithm, state, now, params, e, leastCost);
        e = take.evaluation;
        takes ??= new Array(entries.length);
        takes[i] = take.units;
      }
      let allowed = e.allowed;
      if (policy.ban !== undefined) {
        bannedUntil ??= new Array(entries.length);
        this.#bans ??= new BanTable(this.#maxKeys);
        const until = banInForce(this.#bans, key, now);
        bannedUntil[i] = until;
        if (until !== 0) allowed = false;
      }
      if (!allowed && consume && maxWaitMs !== undefined && (bannedUntil?.[i] ?? 0) === 0) {
        const waitMs = reservedWaitMs(e, maxWaitMs);
        allowed = waitMs > 0;
        if (allowed) {
          waits ??= new Array(entries.length);
          waits[i] = waitMs;
        }
      }
      if (!allowed) {
        all = false;
        if (!policy.shadow) enforced = false;
      }
      evaluations[i] = e;
    }

    let charged = false;
    const verdicts: StoreVerdict[] = new Array(entries.length);
    for (let i = 0; i < entries.length; i++) {
      const e = evaluations[i] as Evaluation<unknown>;
      const { key, policy } = entries[i] as StoreEntry;
      const charge = consume && chargesEntry(policy.shadow, all, enforced);
      const waitMs = charge ? waits?.[i] : undefined; // a reserved turn: charged into debt
      if (charge) {
        charged = true;
        let ttlMs = Math.ceil(e.chargedResetMs) + 1;
        if (ttlMs > MAX_TTL_MS) ttlMs = MAX_TTL_MS;
        const module = ALGORITHMS[policy.algorithm];
        const state = waitMs === undefined ? e.charge() : module.reserve?.(e.charge(), policy);
        this.#table.write(key, policy.algorithm, state, now + ttlMs, now);
      }
      verdicts[i] = {
        allowed: e.allowed || waitMs !== undefined,
        remaining: charge ? e.chargedRemaining : e.remaining,
        // Whole ms, rounded up, as the decide script replies.
        resetMs: Math.ceil(charge ? e.chargedResetMs : e.resetMs),
        retryAfterMs: waitMs === undefined ? wholeWaitMs(e.retryAfterMs) : 0,
      };
      if (waitMs !== undefined) verdicts[i] = { ...(verdicts[i] as StoreVerdict), waitMs };
      if (takes !== undefined && takes[i] !== undefined) {
        verdicts[i] = { ...(verdicts[i] as StoreVerdict), chargedUnits: charge ? takes[i] : 0 };
      }
      if (consume && holdsSlots(policy)) {
        // A consuming check removes the expired slots, charged or not (lua/concurrency.lua).
        if (!charge) reclaimSlots(this.#table, key, now);
        const reclaimed = e.reclaimedSlots as number;
        if (reclaimed > 0) verdicts[i] = { ...(verdicts[i] as StoreVerdict), reclaimedSlots: reclaimed };
      }
      if (bannedUntil !== undefined && policy.ban !== undefined) {
        const bans = this.#bans as BanTable;
        verdicts[i] = banVerdict(
          bans,
          key,
          policy.ban,
          verdicts[i] as StoreVerdict,
          bannedUntil[i] as number,
          consume,
          now,
        );
      }
    }
    if (charged) this.#table.sweep(now);
    if (recordKey !== undefined) this.#records.set(recordKey, verdicts, now + (requestTtlMs as number), now);
    return verdicts;
  }

  /** Settles a reservation, every entry at once, exactly as the settle script does (see `Store.settle`). */
  settle(entries: readonly StoreSettleEntry[]): Promise<boolean[]> {
    return this.#promised(settleInTable, entries);
  }

  /** The synchronous form of `settle`. */
  settleSync(entries: readonly StoreSettleEntry[]): boolean[] {
    return settleInTable(this.#table, entries, this.#now());
  }

  /** Frees concurrency slots (see `Store.releaseSlots`): one flag per slot, true where it was held. */
  releaseSlots(slots: readonly SlotRef[]): Promise<boolean[]> {
    return this.#promised(releaseInTable, slots);
  }

  /** The synchronous form of `releaseSlots`. */
  releaseSlotsSync(slots: readonly SlotRef[]): boolean[] {
    return releaseInTable(this.#table, slots, this.#now());
  }

  /** Renews concurrency slots where still held (see `Store.renewSlots`): one flag per slot, false where lost. */
  renewSlots(slots: readonly SlotRef[]): Promise<boolean[]> {
    return this.#promised(renewInTable, slots);
  }

  /** The synchronous form of `renewSlots`. */
  renewSlotsSync(slots: readonly SlotRef[]): boolean[] {
    return renewInTable(this.#table, slots, this.#now());
  }

  /** `op` on the table now, as a promise (a throw rejects). */
  #promised<T>(op: (table: StateTable, items: readonly T[], now: number) => boolean[], items: readonly T[]) {
    try {
      return Promise.resolve(op(this.#table, items, this.#now()));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Forget these keys (state keys, ban keys or request record keys). */
  reset(keys: readonly string[]): Promise<void> {
    for (const key of keys) {
      this.#table.delete(key);
      this.#bans?.delete(key);
      this.#records.delete(key);
    }
    return Promise.resolve();
  }

  /** Forget every key and request record. */
  clear(): void {
    this.#table.clear();
    this.#bans?.clear();
    this.#records.clear();
  }

  /** The clock's time, checked. */
  #now(): number {
    const now = this.#clock();
    if (typeof now !== 'number' || !Number.isFinite(now)) {
      throw new Error(`MemoryStore: the clock returned ${String(now)}, not a finite number`);
    }
    return now;
  }
}
