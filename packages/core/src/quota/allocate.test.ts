/**
 * Regional quota assignment, run purely: over any sequence of reports, departures and time, the
 * shares held never add up to more than the budget; shares follow demand; a departed client's
 * share goes back to the others within its TTL plus one report.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  heldShares,
  leaveQuota,
  QUOTA_FLOOR_PERMILLE,
  type QuotaTableState,
  quotaTarget,
  reportQuota,
} from './allocate.js';
import { clientName, quotaOps } from './quota-ops.test-support.js';

const START_MS = 1_764_400_000_000;

describe('quota allocation', () => {
  it('never holds more than the budget, over any reports, departures and time', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 100_000 }), quotaOps(6, 200_000, 80), (budget, ops) => {
        const table: QuotaTableState = new Map();
        let nowMs = START_MS;
        for (const op of ops) {
          if (op.kind === 'wait') nowMs += op.ms;
          else if (op.kind === 'leave') leaveQuota(table, clientName(op.client), nowMs);
          else {
            const answer = reportQuota(
              table,
              { clientId: clientName(op.client), budget, demand: op.demand, ttlMs: op.ttlMs },
              nowMs,
            );
            expect(answer.share).toBeGreaterThanOrEqual(0);
            expect(answer.heldSum).toBe(heldShares(table, nowMs));
          }
          expect(heldShares(table, nowMs)).toBeLessThanOrEqual(budget);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('targets of the live clients add up to the budget at most, each at least the floor', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1e9 }),
        fc.array(fc.integer({ min: 0, max: 1e11 }), { minLength: 1, maxLength: 20 }),
        (budget, demands) => {
          const sum = demands.reduce((a, b) => a + b, 0);
          const targets = demands.map((d) => quotaTarget(budget, demands.length, sum, d));
          const floorShare = Math.floor((budget * QUOTA_FLOOR_PERMILLE) / (1000 * demands.length));
          for (const t of targets) expect(t).toBeGreaterThanOrEqual(floorShare);
          expect(targets.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(budget);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('600/200/100 per s on 900/s: each close to its demand once every client reported twice', () => {
    const table: QuotaTableState = new Map();
    const demands = [600, 200, 100];
    let shares: number[] = [];
    for (let round = 0; round < 2; round++) {
      shares = demands.map(
        (demand, i) =>
          reportQuota(table, { clientId: clientName(i), budget: 900, demand, ttlMs: 3000 }, START_MS + round)
            .share,
      );
    }
    // Floor 45 (15 each), pool 855 < demand 900: 15 + 855 x d / 900.
    expect(shares).toEqual([585, 205, 110]);
    expect(heldShares(table, START_MS + 1)).toBeLessThanOrEqual(900);
  });

  it('follows a shift of demand within two reports of each client', () => {
    const table: QuotaTableState = new Map();
    const report = (i: number, demand: number, at: number) =>
      reportQuota(table, { clientId: clientName(i), budget: 900, demand, ttlMs: 3000 }, at).share;
    for (let round = 0; round < 2; round++) {
      for (const [i, d] of [600, 200, 100].entries()) report(i, d, START_MS + round);
    }
    let shares: number[] = [];
    for (let round = 2; round < 4; round++)
      shares = [100, 200, 600].map((d, i) => report(i, d, START_MS + round));
    expect(shares).toEqual([110, 205, 585]);
  });

  it('a departed client gives its share back at its expiry: the next report after takes it', () => {
    const table: QuotaTableState = new Map();
    const report = (i: number, at: number) =>
      reportQuota(table, { clientId: clientName(i), budget: 900, demand: 600, ttlMs: 1000 }, at).share;
    report(0, START_MS);
    report(1, START_MS);
    report(0, START_MS + 1);
    report(1, START_MS + 1);
    leaveQuota(table, clientName(0), START_MS + 2);
    // Until client 0's assignment expires, its share still counts.
    expect(report(1, START_MS + 500)).toBeLessThan(900);
    expect(report(1, START_MS + 1001)).toBe(900);
  });

  it('a silent client is dropped at its expiry', () => {
    const table: QuotaTableState = new Map();
    reportQuota(table, { clientId: 'a', budget: 100, demand: 100, ttlMs: 1000 }, START_MS);
    const b = reportQuota(table, { clientId: 'b', budget: 100, demand: 100, ttlMs: 1000 }, START_MS + 999);
    expect(b.share).toBeLessThan(100);
    const later = reportQuota(
      table,
      { clientId: 'b', budget: 100, demand: 100, ttlMs: 1000 },
      START_MS + 1000,
    );
    expect(later).toEqual({ share: 100, liveClients: 1, demandSum: 100, heldSum: 100 });
  });

  it('refuses numbers out of range, naming them', () => {
    const table: QuotaTableState = new Map();
    expect(() => reportQuota(table, { clientId: '', budget: 1, demand: 1, ttlMs: 1 }, 0)).toThrow(/clientId/);
    expect(() => reportQuota(table, { clientId: 'a', budget: 1.5, demand: 1, ttlMs: 1 }, 0)).toThrow(
      /budget/,
    );
    expect(() => reportQuota(table, { clientId: 'a', budget: 1, demand: -1, ttlMs: 1 }, 0)).toThrow(/demand/);
    expect(() => reportQuota(table, { clientId: 'a', budget: 1, demand: 1, ttlMs: 0 }, 0)).toThrow(/ttlMs/);
  });
});
