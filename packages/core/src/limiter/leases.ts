/**
 * Leases as a step of a check: a leased policy's entry is admitted in-process from units taken
 * from the store before; the store is called only to take the next lease (and for the other policies).
 */

import { OPTION_DEFAULTS } from '../options/defaults.js';
import type { CompiledLease } from '../policy/lease.js';
import { chargedByRule } from '../stores/charge-rule.js';
import type { StoreEntry } from '../types.js';
import type { LimiterCounters } from './counters.js';
import type { Denial, DenialMemory } from './denial-memory.js';
import {
  type LeaseBooks,
  type LeaseCall,
  leasesWhileUnavailable,
  mergeTakes,
  Plan,
} from './lease-answers.js';
import { CheckTimes, showsDemand, takeUnits } from './lease-size.js';
import { type Lease, LeaseTable } from './lease-table.js';
import { deniedVerdict, leaseVerdict, leastUnitsOf, usableUnits } from './lease-verdicts.js';
import { type StoreAnswer, StoreUnavailable, type StoreVerdicts } from './store-answer.js';

/**
 * What the leases make of a check: answered here, the store asked for every entry as it is (no
 * lease spent or taken: cold keys, see `showsDemand`), a store call to make, or a take in flight to wait for.
 */
export type LeaseStep =
  | { readonly kind: 'answered'; readonly answer: StoreVerdicts }
  | { readonly kind: 'exact' }
  | { readonly kind: 'call'; readonly call: LeaseCall }
  | { readonly kind: 'wait'; readonly refill: Promise<void> };

/** The step of a check whose entries all go to the store as they are. */
const EXACT: LeaseStep = Object.freeze({ kind: 'exact' });

/**
 * How long after a key's first take checks of the key may still join that take's store round (ms):
 * the Redis store's default wait of a batch, so the takes sent beside it travel in its call.
 */
const FIRST_ROUND_MS = OPTION_DEFAULTS.redisMaxBatchWaitMs;

/**
 * The units the store's budget for `entry`'s key holds beyond the takes of the key in flight, as
 * last seen: what the last take left; before the key's first take is answered, its whole quota
 * (`limit`: the most a budget holds) while that take's round is still gathered (`inFirstRound`:
 * the same synchronous run, within `FIRST_ROUND_MS`), and not known after (undefined: the checks
 * wait for that take). The takes of a key in flight at once ask for no more than this (the last
 * one down to what is left), so a burst is taken in one round of side-by-side takes, each paying
 * the checks queued behind it, where one take at a time would cost a round per lease.
 */
function budgetBeyondTakes(entry: StoreEntry, lease: Lease, inFirstRound: boolean): number | undefined {
  if (lease.generation > 0) return lease.seenRemaining - lease.takingUnits;
  if (inFirstRound) return entry.policy.limit - lease.takingUnits;
  return undefined;
}

/** Whether an entry's plan spends, takes or answers from a lease. */
const isLeasePlan = (plan: Plan): boolean => plan !== Plan.Store;

/**
 * The leases of one limiter, for the entries of policies with a `lease`. A consuming check whose
 * leased entries all have live units, and no other entry, never reaches the store (source
 * `lease`). Otherwise one store call decides the other entries and takes a lease for each leased
 * entry short of units (`leastCost`: as much as is left, down to what the request needs), all or
 * nothing as one check. A denied take is remembered in the limiter's memory of denials
 * (`DenialMemory`): until its wait is over, at most its maximum age. A check short of units waits
 * for the key's take in flight when that take covers it (what the budget as last seen gives it
 * beyond its own request, less what the checks waiting already count on), and then spends from the
 * lease; a check the take does not cover takes another lease beside it in the same batched store
 * calls while the budget as last seen pays it (a key not taken yet: its whole quota, within its
 * first take's round), and beyond that budget one probe (a take of its own need) goes beside and
 * the checks after it wait for it: its denial answers them. So a burst is decided in the store rounds an unleased burst takes, not
 * a round per lease (a check with other policies rides the store call exact instead). Peeks and
 * idempotent checks skip leases. While the store fails, only `failMode: 'lease'` policies keep
 * spending their leases; the others ask the store (and fail as their fail mode says).
 */
export class Leases {
  readonly #leases: LeaseTable;
  readonly #denials: DenialMemory;
  readonly #books: LeaseBooks;
  /** When keys without a lease were last checked: their demand. */
  readonly #checkTimes: CheckTimes;
  /** The last store call failed: only `failMode: 'lease'` policies spend their leases. */
  #failing = false;
  /** Counts the synchronous runs that made a key's first take (see `#currentTurn`). */
  #turn = 0;
  /** A microtask is queued to end the current run. */
  #turnEnding = false;

  /**
   * @param maxKeys most leases held
   * @param denials what the store last said of each key: the limiter's one memory of denials
   * @param counters where takes, spent and dropped units and remembered denials are counted
   */
  constructor(
    maxKeys: number,
    denials: DenialMemory,
    private readonly counters?: LimiterCounters,
  ) {
    this.#leases = new LeaseTable(maxKeys, counters?.leases);
    this.#denials = denials;
    this.#books = { leases: this.#leases, denials, counters };
    this.#checkTimes = new CheckTimes();
  }

  /** Whether a check of `entries` has a leased entry. */
  applies(entries: readonly StoreEntry[]): boolean {
    return entries.some((e) => e.policy.lease !== undefined);
  }

  /** Plans a consuming check at `nowMs`: each entry from its lease, a remembered denial, a take or the store. */
  plan(entries: readonly StoreEntry[], nowMs: number): LeaseStep {
    const plans: Plan[] = new Array(entries.length);
    let found: (Denial | undefined)[] | undefined;
    let needsStore = false;
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i] as StoreEntry;
      const policyLease = entry.policy.lease;
      if (policyLease === undefined) {
        plans[i] = Plan.Store;
        needsStore = true;
        continue;
      }
      let lease = this.#leases.get(entry.key);
      const checkedAtMs = lease === undefined ? this.#checkTimes.swap(entry.key, nowMs) : lease.checkedAtMs;
      const demand = showsDemand(policyLease, checkedAtMs, nowMs);
      if (lease === undefined) {
        if (!demand && this.#denials.size === 0) {
          // A cold key: checked exactly, like an unleased entry.
          plans[i] = Plan.Store;
          needsStore = true;
          continue;
        }
        lease = this.#leases.hold(entry.key);
      }
      lease.checkedAtMs = nowMs;
      if (this.#spendable(entry, lease, nowMs)) {
        plans[i] = Plan.Local;
        continue;
      }
      if (lease.refill !== undefined) {
        if (entries.length > 1) {
          // With another policy beside it (which could deny the checks a take pays, stranding its
          // units), a check does not queue behind the take in flight: its entry rides the batch, exact.
          plans[i] = Plan.Store;
          needsStore = true;
          continue;
        }
        const covered = lease.cover + 1e-9 >= entry.cost;
        if (covered) lease.cover -= entry.cost;
        // Wait for the take in flight, then spend from the lease, when it pays this check too.
        // Else take beside it while the budget as last seen pays this check; beyond the budget,
        // one take of the check's own need goes beside (its denial answers the checks queued
        // behind it), and the checks after it wait for it.
        if (covered || this.#beyondBudget(entry, lease, nowMs) === true)
          return { kind: 'wait', refill: lease.refill };
      }
      const usable = usableUnits(entry, lease, nowMs, this.#failing);
      const denial = this.#denials.lookup(entry.key, leastUnitsOf(entry, usable), nowMs);
      if (denial !== undefined) {
        plans[i] = Plan.Denied;
        found ??= new Array(entries.length);
        found[i] = denial;
      } else if (demand) {
        plans[i] = Plan.Take;
        needsStore = true;
      } else {
        // A cold key: checked exactly, like an unleased entry (see `showsDemand`).
        plans[i] = Plan.Store;
        needsStore = true;
      }
    }
    if (!needsStore) return { kind: 'answered', answer: this.#answerHere(entries, plans, found, nowMs) };
    if (!plans.some(isLeasePlan)) return EXACT;
    return { kind: 'call', call: this.#send(entries, plans, nowMs) };
  }

  /**
   * The store's answer to a `LeaseCall` at `nowMs`, for the check's entries: takes applied, local
   * entries spent or given back.
   */
  afterStore(
    entries: readonly StoreEntry[],
    call: LeaseCall,
    answer: StoreAnswer,
    nowMs: number,
  ): StoreAnswer {
    this.#release(call);
    if (answer instanceof StoreUnavailable) {
      this.#failing = true;
      return leasesWhileUnavailable(this.#books, entries, call, answer);
    }
    this.#failing = false;
    return {
      source: 'store',
      verdicts: mergeTakes(this.#books, entries, call, answer.verdicts, nowMs),
      results: undefined,
    };
  }

  /** Drops the leases of `keys` (a reset). */
  reset(keys: readonly string[]): void {
    this.#leases.drop(keys);
    this.#checkTimes.forget(keys);
  }

  /**
   * Whether a check of `entry` not paid by the takes of its key in flight at `nowMs` goes beyond
   * the budget as last seen (see {@link budgetBeyondTakes}): false when the budget pays it (it
   * takes beside them); 'probe' when it does not and no probe is in flight (it takes its own need
   * beside them); true when it waits for them (a probe in flight, or the budget not known).
   */
  #beyondBudget(entry: StoreEntry, lease: Lease, nowMs: number): boolean | 'probe' {
    const budget = budgetBeyondTakes(entry, lease, this.#inFirstRound(lease, nowMs));
    if (budget === undefined) return true;
    if (budget + 1e-9 >= entry.cost) return false;
    return lease.probing ? true : 'probe';
  }

  /** Whether the round of `lease`'s first take is still gathered at `nowMs`: the same synchronous run, within `FIRST_ROUND_MS`. */
  #inFirstRound(lease: Lease, nowMs: number): boolean {
    return lease.firstRoundTurn === this.#turn && nowMs < lease.firstRoundEndsAtMs;
  }

  /** The synchronous run the limiter is in: a count moved on by a microtask queued once per run. */
  #currentTurn(): number {
    if (!this.#turnEnding) {
      this.#turnEnding = true;
      queueMicrotask(this.#endTurn);
    }
    return this.#turn;
  }

  /** Ends the current synchronous run (bound once: no closure per run). */
  readonly #endTurn = (): void => {
    this.#turn += 1;
    this.#turnEnding = false;
  };

  /** Whether `lease` can pay `entry` now. */
  #spendable(entry: StoreEntry, lease: Lease | undefined, nowMs: number): boolean {
    return (
      lease !== undefined &&
      nowMs < lease.expiresAtMs &&
      lease.units + 1e-9 >= entry.cost &&
      !(this.#failing && entry.policy.failMode !== 'lease')
    );
  }

  /** The verdicts when no entry needs the store: spent from the leases unless a remembered denial denies. */
  #answerHere(
    entries: readonly StoreEntry[],
    plans: readonly Plan[],
    found: readonly (Denial | undefined)[] | undefined,
    nowMs: number,
  ): StoreVerdicts {
    // Every entry is charged unless a remembered denial denies one (then by the charge rule).
    const charged =
      found === undefined
        ? undefined
        : chargedByRule(
            entries,
            plans.map((plan) => ({ allowed: plan !== Plan.Denied })),
          );
    const verdicts = entries.map((entry, i) => {
      const denial = found?.[i];
      if (denial !== undefined) return deniedVerdict(denial, nowMs);
      const lease = this.#leases.get(entry.key) as Lease;
      if (charged?.[i] ?? true) {
        lease.units -= entry.cost;
        if (this.counters !== undefined) this.counters.leases.spent += entry.cost;
      }
      return leaseVerdict(entry.policy, lease, nowMs);
    });
    return { source: 'lease', verdicts, results: undefined };
  }

  /**
   * The store call of a check: the other entries, and a take for each leased entry short of units
   * (a remembered denial asked again, so the check stays one atomic call). A local entry's units
   * are held out of its lease while the call is out (checks of the key made meanwhile cannot spend
   * them too), and given back to that same lease if not charged.
   */
  #send(entries: readonly StoreEntry[], plans: Plan[], askedAtMs: number): LeaseCall {
    const sent: StoreEntry[] = [];
    const sentIndex: number[] = [];
    const usables: number[] = [];
    const held: (number | undefined)[] = new Array(entries.length);
    const taking: LeaseCall['taking'][number][] = [];
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i] as StoreEntry;
      if (plans[i] === Plan.Local) {
        const lease = this.#leases.get(entry.key) as Lease;
        lease.units -= entry.cost;
        held[i] = lease.generation;
        continue;
      }
      if (plans[i] === Plan.Denied) plans[i] = Plan.Take;
      sentIndex.push(i);
      if (plans[i] === Plan.Store) {
        sent.push(entry);
        usables.push(0);
        continue;
      }
      const lease = this.#leases.hold(entry.key);
      const usable = usableUnits(entry, lease, askedAtMs, this.#failing);
      const need = leastUnitsOf(entry, usable);
      // Beside a take in flight and beyond the budget as last seen: a probe, of the need alone.
      const probe = lease.refill !== undefined && this.#beyondBudget(entry, lease, askedAtMs) === 'probe';
      // A key's first take opens its first round: checks made meanwhile may take beside it.
      if (lease.generation === 0 && lease.refill === undefined) {
        lease.firstRoundEndsAtMs = askedAtMs + FIRST_ROUND_MS;
        lease.firstRoundTurn = this.#currentTurn();
      }
      const units = probe
        ? need
        : Math.max(takeUnits(entry.policy.lease as CompiledLease, lease, askedAtMs), need);
      sent.push({ key: entry.key, policy: entry.policy, cost: units, leastCost: need });
      usables.push(usable);
      // The usable units pay this request: held out, so a take sent meanwhile does not count them too.
      lease.units -= usable;
      held[i] = lease.generation;
      let release = (): void => {};
      lease.refill = new Promise<void>((resolve) => {
        release = resolve;
      });
      lease.release = release;
      // The checks it covers: what the budget as last seen gives this take, beyond the request's own need.
      const budget = budgetBeyondTakes(entry, lease, this.#inFirstRound(lease, askedAtMs)) ?? units;
      lease.cover = Math.max(0, Math.min(units, budget) - need);
      lease.takingUnits += units;
      if (probe) lease.probing = true;
      taking.push({ lease, release, units, probe });
    }
    return { plans, sent, sentIndex, usables, held, taking, askedAtMs };
  }

  /** The takes of `call` are over: the checks they cover go on. */
  #release(call: LeaseCall): void {
    for (const { lease, release, units, probe } of call.taking) {
      lease.takingUnits -= units;
      if (probe) lease.probing = false;
      if (lease.release === release) {
        // No take of the key was sent after this one: none is in flight now.
        lease.refill = undefined;
        lease.release = undefined;
        lease.cover = 0;
      }
      release();
    }
  }
}
