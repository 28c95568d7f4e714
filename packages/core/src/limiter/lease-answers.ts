/** A check's leases around its store call: the plan of each entry, and applying the store's answer to the leases. */

import { chargedByRule } from '../stores/charge-rule.js';
import type { StoreEntry, StoreVerdict } from '../types.js';
import { countTake, type LimiterCounters } from './counters.js';
import { failsClosed } from './decision.js';
import type { DenialMemory } from './denial-memory.js';
import type { Lease, LeaseTable } from './lease-table.js';
import { giveBack, leaseVerdict, remainingView, rememberable, settleTake } from './lease-verdicts.js';
import { StoreUnavailable } from './store-answer.js';

/** How one entry of a check is answered. */
export enum Plan {
  /** No lease: the store decides it. */
  Store,
  /** Spent from the live lease (held out of it while the store call is out). */
  Local,
  /** A new lease is taken in the store call (the request's own units from it). */
  Take,
  /** A take the store denied recently, answered here (see `DenialMemory`). */
  Denied,
}

/** A check's leases while its store call is out: what was sent, and what to settle when it answers. */
export interface LeaseCall {
  readonly plans: readonly Plan[];
  /** The entries sent to the store: the unleased ones, and a take for each leased one short of units. */
  readonly sent: readonly StoreEntry[];
  /** Per sent entry, its index among the check's entries. */
  readonly sentIndex: readonly number[];
  /** Per sent entry, the lease units a take counts on (0 for the others). */
  readonly usables: readonly number[];
  /** Per local or take entry, the generation of the lease its units were held out of; undefined for the others. */
  readonly held: readonly (number | undefined)[];
  /**
   * The takes in flight: each lease, what settles the wait of the checks its take covers, its
   * units, and whether it is a probe (beyond the budget as last seen, see `Leases`).
   */
  readonly taking: readonly {
    readonly lease: Lease;
    readonly release: () => void;
    readonly units: number;
    readonly probe: boolean;
  }[];
  /** When the check asked (ms). */
  readonly askedAtMs: number;
}

/** What the leases of one limiter keep: the table, the memory of denials, the counters. */
export interface LeaseBooks {
  readonly leases: LeaseTable;
  readonly denials: DenialMemory;
  readonly counters: LimiterCounters | undefined;
}

/** What a local entry (spent from its lease) counts as in the charge rule: it admitted its units. */
const LOCAL_ADMITTED = Object.freeze({ allowed: true });

/**
 * The store's verdicts for the sent entries, the takes applied to the leases, and the local entries
 * spent. A lone leased entry whose take was denied while another take of its key was granted (takes
 * side by side) is admitted from the lease that take filled, when it is live at `nowMs` and pays it.
 */
export function mergeTakes(
  books: LeaseBooks,
  entries: readonly StoreEntry[],
  call: LeaseCall,
  storeVerdicts: readonly StoreVerdict[],
  nowMs: number,
): StoreVerdict[] {
  const { plans, sent, sentIndex, usables, held, askedAtMs } = call;
  // A local entry admitted its units; every other entry was sent and has the store's verdict.
  const admitted: { readonly allowed: boolean }[] = entries.map(() => LOCAL_ADMITTED);
  sentIndex.forEach((i, j) => {
    admitted[i] = storeVerdicts[j] as StoreVerdict;
  });
  const charged = chargedByRule(entries, admitted);
  const verdicts: StoreVerdict[] = new Array(entries.length);
  sentIndex.forEach((i, j) => {
    const verdict = storeVerdicts[j] as StoreVerdict;
    const entry = entries[i] as StoreEntry;
    if (plans[i] !== Plan.Take) {
      verdicts[i] = verdict;
      return;
    }
    const lease = books.leases.hold(entry.key);
    const take = sent[j] as StoreEntry;
    const usable = usables[j] as number;
    const generation = held[i] as number;
    const { granted, dropped } = settleTake(lease, books.denials, {
      entry,
      take,
      usable,
      generation,
      verdict,
      charged: charged[i] as boolean,
      askedAtMs,
    });
    if (books.counters !== undefined)
      countTake(books.counters, entry, granted, dropped, granted === 0 && rememberable(verdict));
    if (
      granted === 0 &&
      entries.length === 1 &&
      nowMs < lease.expiresAtMs &&
      lease.units + 1e-9 >= entry.cost
    ) {
      lease.units -= entry.cost;
      if (books.counters !== undefined) books.counters.leases.spent += entry.cost;
      verdicts[i] = leaseVerdict(entry.policy, lease, nowMs);
      return;
    }
    verdicts[i] = remainingView(entry.policy, lease, verdict);
  });
  for (let i = 0; i < entries.length; i++) {
    if (plans[i] !== Plan.Local) continue;
    const entry = entries[i] as StoreEntry;
    const lease = books.leases.hold(entry.key);
    if (!charged[i]) giveBack(entry.cost, lease, held[i], books.counters);
    else if (books.counters !== undefined) books.counters.leases.spent += entry.cost;
    verdicts[i] = leaseVerdict(entry.policy, lease, askedAtMs);
  }
  return verdicts;
}

/**
 * The store could not decide: `failMode: 'lease'` entries with live units are answered from
 * their leases (spent unless an enforced entry fails closed anyway); the rest fail as their
 * fail mode says.
 */
export function leasesWhileUnavailable(
  books: LeaseBooks,
  entries: readonly StoreEntry[],
  call: LeaseCall,
  answer: StoreUnavailable,
): StoreUnavailable {
  const { plans, held, askedAtMs } = call;
  const fromLease = entries.map((e, i) => plans[i] === Plan.Local && e.policy.failMode === 'lease');
  const closedElsewhere = failsClosed(entries.filter((_e, i) => !fromLease[i]));
  // Held units not spent (the request fails anyway, or its policy does not spend leases now): back.
  entries.forEach((entry, i) => {
    if (plans[i] === Plan.Local && (!fromLease[i] || closedElsewhere))
      giveBack(entry.cost, books.leases.hold(entry.key), held[i], books.counters);
    else if (fromLease[i] && books.counters !== undefined) books.counters.leases.spent += entry.cost;
  });
  // A take's units it counted on go back to their lease.
  call.sentIndex.forEach((i, j) => {
    if (plans[i] === Plan.Take) {
      const entry = entries[i] as StoreEntry;
      giveBack(call.usables[j] as number, books.leases.hold(entry.key), held[i], books.counters);
    }
  });
  if (!fromLease.includes(true)) return answer;
  const verdicts = entries.map((entry, i) =>
    fromLease[i]
      ? leaseVerdict(entry.policy, books.leases.hold(entry.key), askedAtMs)
      : answer.localVerdicts?.[i],
  );
  return new StoreUnavailable(answer.cause, verdicts);
}
