/** `limiter.settle`: the actual cost of a reserved check, settled once, through the store layers. */

import { holdsSlots } from '../algorithms/concurrency.js';
import { ALGORITHMS } from '../algorithms/registry.js';
import { describeValue } from '../policy/errors.js';
import type { Clock, Decision, StoreEntry, StoreSettleEntry, StoreVerdict } from '../types.js';
import type { SettleWhere } from './charged.js';
import { chargedOf } from './charged.js';
import type { SettleUnits } from './limiter.js';
import type { Steps } from './steps.js';
import type { SettleAnswer } from './store-answer.js';

/**
 * What a check charged, kept for its settle: the entries, where, and when: the store charged
 * them between `atMs` (the check asked) and `byMs` (its answer came back).
 */
interface Reservation {
  readonly entries: readonly StoreEntry[];
  /** Per entry, the turn it reserved (waiting: the verdict's `waitMs`); undefined where none. */
  readonly waits: readonly (number | undefined)[] | undefined;
  readonly atMs: number;
  readonly byMs: number;
  readonly where: SettleWhere;
}

/**
 * The reservations of decisions not settled yet, by Decision object: the decision stays plain
 * data (no keys on it), and a settled or collected decision leaves nothing behind.
 */
export class Reservations {
  readonly #byDecision = new WeakMap<Decision, Reservation>();

  /**
   * @param clock the limiter's clock
   * @param stepsOf the limiter's current steps (`updatePolicies` composes them anew; a decision
   *   made before an update settles through the steps of the moment it settles)
   */
  constructor(
    private readonly clock: Clock,
    private readonly stepsOf: () => Steps,
  ) {}

  /**
   * Keeps what `decision` charged, when a settle can change it: of an allowed decision the store,
   * its leases or the local fallback made, exactly the entries the check charged (`chargedByRule`:
   * with a shadow policy denying, the enforced ones). A fail-open, fail-closed or denied decision
   * charged nothing to settle (fail-open and local: only the local entries). `askedAtMs` is
   * `now()` as the check asked the store; the answer is now. `verdicts` (the store's) tell the turns
   * a waiting check reserved.
   */
  keep(
    decision: Decision,
    entries: readonly StoreEntry[],
    askedAtMs: number,
    verdicts?: readonly StoreVerdict[],
  ): void {
    const charged = chargedOf(decision, entries);
    if (charged === undefined) return;
    // A concurrency slot is released, never settled.
    const units = charged.entries.filter((e) => !holdsSlots(e.policy));
    if (units.length === 0) return;
    // A reserved turn: the store counts no refill before it when it settles (a cancel gives all back).
    const waits = verdicts?.some((v) => v.waitMs !== undefined)
      ? units.map((e) => verdicts[entries.indexOf(e)]?.waitMs)
      : undefined;
    this.#byDecision.set(decision, {
      entries: units,
      waits,
      atMs: askedAtMs,
      byMs: this.clock(),
      where: charged.where,
    });
  }

  /**
   * The limiter's clock, read as a check that reserves asks the store: the store charged at or
   * after this moment, so a settle puts the reservation no later than it was (a sliding log finds
   * its records, a window its window, unless a boundary fell within the round trip).
   */
  now(): number {
    return this.clock();
  }

  /**
   * Settles `decision` to `units` once: the first call settles, every later one (and one for a
   * decision that reserved nothing) answers `noop`. Bad units reject with a TypeError naming the
   * value; a store failure is `unavailable`, never a rejection. The steps, in order: the entries
   * whose units changed; a refund's keys forgotten by the memory of denials (the deny cache's too)
   * (units given back: a remembered denial or wait may no longer hold); the settle, in the local fallback
   * for a local decision, else in the store (breaker and deadline).
   */
  async settle(decision: Decision, units: SettleUnits): Promise<SettleAnswer> {
    const unitsOf = unitsReader(decision, units);
    const reservation = this.#byDecision.get(decision);
    if (reservation === undefined) return 'noop';
    const entries = settleEntries(reservation, unitsOf, this.clock());
    this.#byDecision.delete(decision);
    if (entries.length === 0) return 'noop';
    const { denials, fallback, store } = this.stepsOf();
    const refunded = entries.filter((e) => e.actualUnits < e.reservedUnits).map((e) => e.key);
    if (refunded.length > 0) denials?.forget(refunded);
    if (reservation.where === 'local') return fallback === undefined ? 'noop' : fallback.settle(entries);
    return store.settle(entries);
  }
}

/** The entries of `reservation` whose units change, as the store settles them at `nowMs`. */
function settleEntries(
  reservation: Reservation,
  unitsOf: (policy: string) => number | undefined,
  nowMs: number,
): StoreSettleEntry[] {
  const reservedAgoMs = Math.max(0, nowMs - reservation.atMs);
  const answeredAgoMs = Math.min(reservedAgoMs, Math.max(0, nowMs - reservation.byMs));
  const entries: StoreSettleEntry[] = [];
  for (let i = 0; i < reservation.entries.length; i++) {
    const { key, policy, cost } = reservation.entries[i] as StoreEntry;
    const actualUnits = unitsOf(policy.name) ?? cost;
    if (ALGORITHMS[policy.algorithm].store.wholeCosts && !Number.isInteger(actualUnits)) {
      throw new TypeError(
        `limiter.settle: "units" for policy "${policy.name}" (${policy.algorithm}) must be a whole number, got ${actualUnits}`,
      );
    }
    if (actualUnits === cost) continue;
    const waitMs = reservation.waits?.[i];
    entries.push({
      key,
      policy,
      reservedUnits: cost,
      actualUnits,
      reservedAgoMs,
      answeredAgoMs,
      ...(waitMs !== undefined && { waitMs }),
    });
  }
  return entries;
}

/** A valid number of units: finite and >= 0. */
const isUnits = (value: unknown): value is number =>
  typeof value === 'number' && value >= 0 && value !== Number.POSITIVE_INFINITY;

/**
 * The units by policy name (undefined: the policy keeps its reservation), checked: a number >= 0,
 * or a record of them naming only policies of the decision.
 */
function unitsReader(decision: Decision, units: SettleUnits): (policy: string) => number | undefined {
  if (typeof decision !== 'object' || decision === null) {
    throw new TypeError(
      `limiter.settle: "decision" must be a decision of limiter.check, got ${describeValue(decision)}`,
    );
  }
  if (isUnits(units)) return () => units;
  if (typeof units !== 'object' || units === null || Array.isArray(units)) {
    throw new TypeError(
      `limiter.settle: "units" must be a number >= 0 or a record of them by policy name, got ${describeValue(units)}`,
    );
  }
  const names = new Set(decision.results.map((r) => r.policy));
  for (const [name, value] of Object.entries(units)) {
    if (!names.has(name)) {
      throw new TypeError(
        `limiter.settle: "units" names policy "${name}", which did not apply to this decision`,
      );
    }
    if (!isUnits(value)) {
      throw new TypeError(
        `limiter.settle: "units.${name}" must be a number >= 0, got ${describeValue(value)}`,
      );
    }
  }
  // Own entries only: a policy named `constructor` is not Object.prototype's member.
  return (policy) => (Object.hasOwn(units, policy) ? (units as Record<string, number>)[policy] : undefined);
}
