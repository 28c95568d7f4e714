/**
 * Leases as a store layer: a leased policy's entry is admitted in-process from units taken from
 * the store before; the store is called only to take the next lease (and for the other policies).
 */
import { type CompiledLease, fallbackFailMode } from '../policy/lease.js';
import type { Clock, StoreEntry, StoreVerdict } from '../types.js';
import { countTake, type LimiterCounters } from './counters.js';
import { type Denial, DenialMemory } from './denial-memory.js';
import { takeUnits } from './lease-size.js';
import { type Lease, LeaseTable } from './lease-table.js';
import {
  deniedVerdict,
  leaseVerdict,
  leastUnitsOf,
  remainingView,
  rememberable,
  settleTake,
  usableUnits,
} from './lease-verdicts.js';
import { type AnswerHandler, type MaybePromise, type StoreLayer, StoreUnavailable } from './store-answer.js';

/** How the lease layer handles one entry of a check. */
enum Plan {
  /** No lease: the store decides it. */
  Store,
  /** Spent from the live lease. */
  Local,
  /** A new lease is taken in the store call (the request's own units from it). */
  Take,
  /** A take the store denied recently, answered here (see `DenialMemory`). */
  Denied,
}

/** Per entry of a check, the lease its units were held out of (its `generation`); undefined for the others. */
type Held = (number | undefined)[];

/**
 * Gives held units back to the lease they came from; a lease taken since (or dropped) does not get
 * them (they are counted dropped).
 */
function giveBack(
  entry: StoreEntry,
  lease: Lease,
  heldFrom: number | undefined,
  counters?: LimiterCounters,
): void {
  if (heldFrom !== undefined && lease.generation === heldFrom) lease.units += entry.cost;
  else if (heldFrom !== undefined && counters !== undefined) counters.leases.dropped += entry.cost;
}

/** A store layer with leases, and the table it holds them in. */
export interface LeaseLayer extends StoreLayer {
  readonly leases: LeaseTable;
}

/**
 * Wraps `inner` with leases for the entries of policies with a `lease`. A consuming check whose
 * leased entries all have live units, and no other entry, never reaches the store (source
 * `lease`). Otherwise one store call decides the other entries and takes a lease for each leased
 * entry short of units (`leastCost`: as much as is left, down to what the request needs), all or
 * nothing as one check. A denied take is remembered by the rule of every in-process denial
 * (`DenialMemory`): until its wait is over, at most `denialMaxAgeMs`. One take per key at a
 * time: a check that needs the key's lease while a take is in flight waits for it. Peeks and
 * idempotent checks pass through. While the store fails, only `failMode: 'lease'` policies keep
 * spending their leases; the others ask the store (and fail as their fail mode says).
 */
export function withLeases(
  inner: StoreLayer,
  clock: Clock,
  maxKeys: number,
  denialMaxAgeMs: number,
  counters?: LimiterCounters,
): LeaseLayer {
  const leases = new LeaseTable(maxKeys, counters?.leases);
  const denials = new DenialMemory(maxKeys, denialMaxAgeMs);
  let failing = false;

  /** Whether `lease` can pay `entry` now. */
  const spendable = (entry: StoreEntry, lease: Lease | undefined, nowMs: number): boolean =>
    lease !== undefined &&
    nowMs < lease.expiresAtMs &&
    lease.units + 1e-9 >= entry.cost &&
    !(failing && entry.policy.failMode !== 'lease');

  const decideLeased = <T>(entries: readonly StoreEntry[], then: AnswerHandler<T>): MaybePromise<T> => {
    const nowMs = clock();
    const plans: Plan[] = new Array(entries.length);
    // Per entry answered from a remembered denial: that denial.
    let found: (Denial | undefined)[] | undefined;
    let needsStore = false;
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i] as StoreEntry;
      if (entry.policy.lease === undefined) {
        plans[i] = Plan.Store;
        needsStore = true;
        continue;
      }
      const lease = leases.get(entry.key);
      if (lease?.refill !== undefined) return lease.refill.then(() => decideLeased(entries, then));
      if (spendable(entry, lease, nowMs)) {
        plans[i] = Plan.Local;
        continue;
      }
      const usable = lease === undefined ? 0 : usableUnits(entry, lease, nowMs, failing);
      const denial = denials.lookup(entry.key, leastUnitsOf(entry, usable), nowMs);
      if (denial !== undefined) {
        plans[i] = Plan.Denied;
        found ??= new Array(entries.length);
        found[i] = denial;
      } else {
        plans[i] = Plan.Take;
        needsStore = true;
      }
    }
    if (!needsStore) {
      const verdicts = answerHere(entries, plans, found, nowMs);
      return then({ source: 'lease', verdicts, results: undefined });
    }
    return callStore(entries, plans, nowMs, then);
  };

  /** The verdicts when no entry needs the store: spent from the leases unless one denies. */
  const answerHere = (
    entries: readonly StoreEntry[],
    plans: Plan[],
    found: readonly (Denial | undefined)[] | undefined,
    nowMs: number,
  ): StoreVerdict[] => {
    let enforcedDenied = false;
    let anyDenied = false;
    for (let i = 0; i < entries.length; i++) {
      if (plans[i] !== Plan.Denied) continue;
      anyDenied = true;
      if (!(entries[i] as StoreEntry).policy.shadow) enforcedDenied = true;
    }
    return entries.map((entry, i) => {
      const denial = found?.[i];
      if (denial !== undefined) return deniedVerdict(denial, nowMs);
      const lease = leases.get(entry.key) as Lease;
      const charge = entry.policy.shadow ? !anyDenied : !enforcedDenied;
      if (charge) lease.units -= entry.cost;
      if (charge && counters !== undefined) counters.leases.spent += entry.cost;
      return leaseVerdict(entry.policy, lease, nowMs);
    });
  };

  const callStore = <T>(
    entries: readonly StoreEntry[],
    plans: Plan[],
    askedAtMs: number,
    then: AnswerHandler<T>,
  ): MaybePromise<T> => {
    const sent: StoreEntry[] = [];
    const sentIndex: number[] = [];
    // Per sent entry: the lease units a take counts on (0 for the others).
    const usables: number[] = [];
    const releases: (() => void)[] = [];
    // Per local entry: its units are held out of the lease while the call is out (checks of the
    // key made meanwhile cannot spend them too), and given back to that same lease if not charged.
    const held: Held = new Array(entries.length);
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i] as StoreEntry;
      if (plans[i] === Plan.Local) {
        const lease = leases.get(entry.key) as Lease;
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
      const lease = leases.hold(entry.key);
      const usable = usableUnits(entry, lease, askedAtMs, failing);
      const need = leastUnitsOf(entry, usable);
      const units = takeUnits(entry.policy.lease as CompiledLease, lease, askedAtMs);
      sent.push({ key: entry.key, policy: entry.policy, cost: Math.max(units, need), leastCost: need });
      usables.push(usable);
      lease.refill = new Promise<void>((resolve) => releases.push(resolve));
    }
    const release = (): void => {
      for (const i of sentIndex) {
        const lease = leases.get((entries[i] as StoreEntry).key);
        if (lease !== undefined && plans[i] === Plan.Take) lease.refill = undefined;
      }
      for (const resolve of releases) resolve();
    };
    try {
      return inner.decide(sent, 'consume', undefined, (answer) => {
        release();
        if (answer instanceof StoreUnavailable) {
          failing = true;
          return then(unavailableHere(entries, plans, held, answer, askedAtMs));
        }
        failing = false;
        const verdicts = merge(
          entries,
          plans,
          { sent, sentIndex, usables, held },
          answer.verdicts,
          askedAtMs,
        );
        return then({ source: 'store', verdicts, results: undefined });
      }) as MaybePromise<T>;
    } catch (error) {
      release();
      throw error;
    }
  };

  /** The store's verdicts for the sent entries, the takes applied to the leases, and the local entries spent. */
  const merge = (
    entries: readonly StoreEntry[],
    plans: Plan[],
    {
      sent,
      sentIndex,
      usables,
      held,
    }: { sent: StoreEntry[]; sentIndex: number[]; usables: number[]; held: Held },
    storeVerdicts: readonly StoreVerdict[],
    askedAtMs: number,
  ): StoreVerdict[] => {
    let enforcedAllow = true;
    let allAllow = true;
    storeVerdicts.forEach((v, j) => {
      if (v.allowed) return;
      allAllow = false;
      if (!(sent[j] as StoreEntry).policy.shadow) enforcedAllow = false;
    });
    const verdicts: StoreVerdict[] = new Array(entries.length);
    sentIndex.forEach((i, j) => {
      const verdict = storeVerdicts[j] as StoreVerdict;
      const entry = entries[i] as StoreEntry;
      if (plans[i] !== Plan.Take) {
        verdicts[i] = verdict;
        return;
      }
      const charged = entry.policy.shadow ? allAllow : enforcedAllow;
      const lease = leases.hold(entry.key);
      const take = sent[j] as StoreEntry;
      const leftoverUnits = lease.units;
      const usable = usables[j] as number;
      const granted = settleTake(lease, denials, { entry, take, usable, verdict, charged, askedAtMs });
      if (counters !== undefined)
        countTake(counters, entry, granted, leftoverUnits, usable, granted === 0 && rememberable(verdict));
      verdicts[i] = remainingView(entry.policy, lease, verdict);
    });
    for (let i = 0; i < entries.length; i++) {
      if (plans[i] !== Plan.Local) continue;
      const entry = entries[i] as StoreEntry;
      const lease = leases.hold(entry.key);
      if (!(entry.policy.shadow ? allAllow : enforcedAllow)) giveBack(entry, lease, held[i], counters);
      else if (counters !== undefined) counters.leases.spent += entry.cost;
      verdicts[i] = leaseVerdict(entry.policy, lease, askedAtMs);
    }
    return verdicts;
  };

  /**
   * The store could not decide: `failMode: 'lease'` entries with live units are answered from
   * their leases (spent unless an enforced entry fails closed anyway); the rest fail as their
   * fail mode says.
   */
  const unavailableHere = (
    entries: readonly StoreEntry[],
    plans: Plan[],
    held: Held,
    answer: StoreUnavailable,
    nowMs: number,
  ): StoreUnavailable => {
    const fromLease = entries.map((e, i) => plans[i] === Plan.Local && e.policy.failMode === 'lease');
    const closedElsewhere = entries.some(
      (e, i) => !fromLease[i] && !e.policy.shadow && fallbackFailMode(e.policy) === 'closed',
    );
    // Held units not spent (the request fails anyway, or its policy does not spend leases now): back.
    entries.forEach((entry, i) => {
      if (plans[i] === Plan.Local && (!fromLease[i] || closedElsewhere))
        giveBack(entry, leases.hold(entry.key), held[i], counters);
      else if (fromLease[i] && counters !== undefined) counters.leases.spent += entry.cost;
    });
    if (!fromLease.includes(true)) return answer;
    const verdicts = entries.map((entry, i) =>
      fromLease[i] ? leaseVerdict(entry.policy, leases.hold(entry.key), nowMs) : answer.localVerdicts?.[i],
    );
    return new StoreUnavailable(answer.cause, verdicts);
  };

  return {
    leases,
    decide(entries, mode, options, then) {
      if (mode !== 'consume' || options !== undefined || !entries.some((e) => e.policy.lease !== undefined)) {
        return inner.decide(entries, mode, options, then);
      }
      return decideLeased(entries, then);
    },
    reset(keys) {
      leases.drop(keys);
      denials.forget(keys);
      return inner.reset(keys);
    },
    settle(entries, where) {
      return inner.settle(entries, where);
    },
  };
}
