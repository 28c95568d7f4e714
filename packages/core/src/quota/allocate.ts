/**
 * Regional quota assignment, computed purely: one bucket's table of clients and the step a report
 * or a departure takes on it. The twin of lua/quota.lua (same steps, same numbers), so the memory
 * table and the Redis script assign identical shares from identical inputs. Web-standard.
 */

/** Per mille of a bucket's budget split evenly among its live clients, whatever their demand. */
export const QUOTA_FLOOR_PERMILLE = 50;

/** One client's holding in a bucket. */
export interface QuotaHolding {
  /** The share last assigned, whole requests per the rule's unit. */
  readonly share: number;
  /** The demand it last reported, whole requests per the rule's unit. */
  readonly demand: number;
  /** When the assignment ends (ms since the epoch); the share counts until then. */
  readonly expiresAtMs: number;
  /** The client left (its stream closed): it no longer counts for targets. */
  readonly gone: boolean;
}

/** One bucket's clients, by client id. */
export type QuotaTableState = Map<string, QuotaHolding>;

/** A client's report, as the allocation takes it. */
export interface QuotaReport {
  readonly clientId: string;
  /** The bucket's global budget, whole requests per unit. */
  readonly budget: number;
  /** The client's demand (allowed + denied per unit over its report), whole requests per unit. */
  readonly demand: number;
  /** How long the assignment lives, ms. */
  readonly ttlMs: number;
}

/** What a report or a departure leaves. */
export interface QuotaAnswer {
  /** The client's share (0 after a departure), whole requests per unit. */
  readonly share: number;
  /** Live clients of the bucket (not gone, not expired). */
  readonly liveClients: number;
  /** Their demand added up. */
  readonly demandSum: number;
  /** Every share still held (gone clients until they expire) added up: never above the budget. */
  readonly heldSum: number;
}

const MAX_SAFE = 2 ** 53;

/** Throws a TypeError naming the argument unless `value` is a whole number in [0, max). */
function checkWhole(name: string, value: number, max: number): void {
  if (!Number.isInteger(value) || value < 0 || value >= max) {
    throw new TypeError(`quota: "${name}" must be a whole number from 0 to ${max}, got ${value}`);
  }
}

/** Checks a report's numbers and its client id, as lua/quota.lua does before it reads anything. */
export function checkQuotaReport(report: QuotaReport): void {
  if (typeof report.clientId !== 'string' || report.clientId === '') {
    throw new TypeError(
      `quota: "clientId" must be a non-empty string, got ${JSON.stringify(report.clientId)}`,
    );
  }
  checkWhole('budget', report.budget, MAX_SAFE);
  checkWhole('demand', report.demand, 1e12);
  if (!(report.ttlMs > 0 && report.ttlMs < 1e13)) {
    throw new TypeError(`quota: "ttlMs" must be a positive number of ms, got ${report.ttlMs}`);
  }
}

/**
 * A live client's target: `floor` (QUOTA_FLOOR_PERMILLE of the budget split evenly among the live
 * clients) plus its part of the rest, the pool: its demand and an even part of the spare when
 * every demand fits the pool, else its part of the pool in proportion to its demand. The targets
 * of all live clients add up to the budget at most.
 */
export function quotaTarget(budget: number, live: number, demandSum: number, demand: number): number {
  const floorShare = Math.floor((budget * QUOTA_FLOOR_PERMILLE) / (1000 * live));
  const pool = budget - live * floorShare;
  if (demandSum <= pool) return floorShare + demand + Math.floor((pool - demandSum) / live);
  return floorShare + Math.floor(pool * (demand / demandSum));
}

/** Drops the expired clients; returns the others' share and live demand sums, without `clientId`. */
function sweep(
  table: QuotaTableState,
  clientId: string,
  nowMs: number,
): { othersHeld: number; live: number; demandSum: number } {
  let othersHeld = 0;
  let live = 0;
  let demandSum = 0;
  for (const [id, holding] of table) {
    if (holding.expiresAtMs <= nowMs) {
      table.delete(id);
      continue;
    }
    if (id === clientId) continue;
    othersHeld += holding.share;
    if (!holding.gone) {
      live += 1;
      demandSum += holding.demand;
    }
  }
  return { othersHeld, live, demandSum };
}

/**
 * A client's report: its new share is its target (`quotaTarget`) capped by the budget less every
 * other share still held, so the shares held never add up to more than the budget; its share,
 * demand and expiry (`nowMs + ttlMs`) are written to `table`.
 *
 * @throws TypeError when the report's numbers are out of range (`checkQuotaReport`)
 */
export function reportQuota(table: QuotaTableState, report: QuotaReport, nowMs: number): QuotaAnswer {
  checkQuotaReport(report);
  const { othersHeld, live, demandSum } = sweep(table, report.clientId, nowMs);
  const liveClients = live + 1;
  const demandTotal = demandSum + report.demand;
  const target = quotaTarget(report.budget, liveClients, demandTotal, report.demand);
  const share = Math.max(0, Math.min(target, report.budget - othersHeld));
  table.set(report.clientId, {
    share,
    demand: report.demand,
    expiresAtMs: nowMs + report.ttlMs,
    gone: false,
  });
  return { share, liveClients, demandSum: demandTotal, heldSum: othersHeld + share };
}

/** A client's departure: marked gone, its share held until it expires. */
export function leaveQuota(table: QuotaTableState, clientId: string, nowMs: number): QuotaAnswer {
  const { othersHeld, live, demandSum } = sweep(table, clientId, nowMs);
  const mine = table.get(clientId);
  if (mine === undefined) return { share: 0, liveClients: live, demandSum, heldSum: othersHeld };
  table.set(clientId, { ...mine, gone: true });
  return { share: 0, liveClients: live, demandSum, heldSum: othersHeld + mine.share };
}

/** Every share in `table` not expired at `nowMs`, added up. */
export function heldShares(table: QuotaTableState, nowMs: number): number {
  let held = 0;
  for (const holding of table.values()) if (holding.expiresAtMs > nowMs) held += holding.share;
  return held;
}
