/**
 * Where regional quota assignments live: `RedisQuotaTable` (lua/quota.lua through a script
 * transport, one atomic call per report, shared by every server on that Redis) and
 * `MemoryQuotaTable` (one process, the same steps in TypeScript). Web-standard.
 */
import { QUOTA_SCRIPT_SHA1, QUOTA_SCRIPT_SOURCE } from '../generated/scripts.js';
import type { ScriptSource, ScriptTransport } from '../redis/transport.js';
import type { Clock } from '../types.js';
import {
  checkQuotaReport,
  leaveQuota,
  type QuotaAnswer,
  type QuotaReport,
  type QuotaTableState,
  reportQuota,
} from './allocate.js';

/** The quota script: Lua source and its SHA1 (hex), for EVALSHA with EVAL as fallback. */
export const QUOTA_SCRIPT: ScriptSource = Object.freeze({
  source: QUOTA_SCRIPT_SOURCE,
  sha1: QUOTA_SCRIPT_SHA1,
});

/** The assignments of every bucket: a report gets a share, a departure gives it back at its expiry. */
export interface QuotaTable {
  /** Records a client's report on the bucket at `bucketKey` and resolves with its new share. */
  report(bucketKey: string, report: QuotaReport): Promise<QuotaAnswer>;
  /** Marks a client of the bucket gone (its share counts until it expires). */
  leave(bucketKey: string, clientId: string): Promise<QuotaAnswer>;
}

/** The ARGV of one quota script call (see lua/quota.lua); `nowMs` undefined = Redis TIME. */
export function encodeQuotaArgs(
  mode: 'report' | 'leave',
  report: QuotaReport | { readonly clientId: string },
  nowMs?: number,
): string[] {
  const now = nowMs === undefined ? '' : String(nowMs);
  if (mode === 'leave') return [now, mode, report.clientId, '0'];
  const r = report as QuotaReport;
  checkQuotaReport(r);
  return [now, mode, r.clientId, String(r.budget), String(r.demand), String(r.ttlMs)];
}

/** The script's reply as a `QuotaAnswer`; throws on any other shape. */
export function decodeQuotaReply(reply: unknown): QuotaAnswer {
  if (!Array.isArray(reply) || reply.length !== 4 || reply.some((n) => typeof n !== 'number')) {
    throw new Error(`quota: unexpected script reply ${JSON.stringify(reply)}`);
  }
  const [share, liveClients, demandSum, heldSum] = reply as number[];
  return { share: share!, liveClients: liveClients!, demandSum: demandSum!, heldSum: heldSum! };
}

/** Assignments in Redis, one hash per bucket, each report one call of lua/quota.lua. */
export class RedisQuotaTable implements QuotaTable {
  /**
   * @param transport the script transport (a `RedisStore`'s `transport`, or `ioredisTransport(client)`)
   * @param clock an explicit time for tests; undefined = Redis TIME (every server one clock)
   */
  constructor(
    private readonly transport: ScriptTransport,
    private readonly clock?: Clock,
  ) {}

  async report(bucketKey: string, report: QuotaReport): Promise<QuotaAnswer> {
    const args = encodeQuotaArgs('report', report, this.clock?.());
    return decodeQuotaReply(await this.transport.run(QUOTA_SCRIPT, [bucketKey], args));
  }

  async leave(bucketKey: string, clientId: string): Promise<QuotaAnswer> {
    const args = encodeQuotaArgs('leave', { clientId }, this.clock?.());
    return decodeQuotaReply(await this.transport.run(QUOTA_SCRIPT, [bucketKey], args));
  }
}

/** Assignments in this process (no Redis): the same steps as the script, for one server only. */
export class MemoryQuotaTable implements QuotaTable {
  private readonly buckets = new Map<string, QuotaTableState>();

  /** @param clock ms since the epoch (tests inject one) */
  constructor(private readonly clock: Clock = Date.now) {}

  async report(bucketKey: string, report: QuotaReport): Promise<QuotaAnswer> {
    return this.reportNow(bucketKey, report);
  }

  async leave(bucketKey: string, clientId: string): Promise<QuotaAnswer> {
    return this.leaveNow(bucketKey, clientId);
  }

  /** `report`, answered at once. */
  reportNow(bucketKey: string, report: QuotaReport): QuotaAnswer {
    let table = this.buckets.get(bucketKey);
    if (table === undefined) {
      table = new Map();
      this.buckets.set(bucketKey, table);
    }
    return reportQuota(table, report, this.clock());
  }

  /** `leave`, answered at once; a bucket left with no client is dropped. */
  leaveNow(bucketKey: string, clientId: string): QuotaAnswer {
    const table = this.buckets.get(bucketKey);
    if (table === undefined) return { share: 0, liveClients: 0, demandSum: 0, heldSum: 0 };
    const answer = leaveQuota(table, clientId, this.clock());
    if (table.size === 0) this.buckets.delete(bucketKey);
    return answer;
  }
}
