/**
 * `RedisStore`: every check is decided by the decide script, one atomic decision per check.
 * The store is the lifecycle around two parts: a script batcher (redis/script-batcher.ts: checks
 * issued close together share one script call, grouped by hash slot where the transport needs
 * it) and a transport (redis/transports/: ioredis Redis or Cluster, node-redis, Redis over
 * HTTP, any `EvalClient`). It also reads Redis's `maxmemory-policy` once. Web-standard.
 */

import type { ScriptStats } from '../limiter/counters.js';
import { OPTION_DEFAULTS } from '../options/defaults.js';
import { warnOnEvictingPolicy } from '../redis/memory-policy.js';
import { encodeScriptNow, RESET_SCRIPT } from '../redis/script.js';
import { ScriptBatcher } from '../redis/script-batcher.js';
import { decodeSettleReply, encodeSettle, SETTLE_SCRIPT } from '../redis/settle-script.js';
import { SlotReleases } from '../redis/slot-releases.js';
import { runSlotsScript } from '../redis/slots-script.js';
import { isNoScriptError, isScriptTransport, type ScriptTransport } from '../redis/transport.js';
import { evalClientTransport } from '../redis/transports/eval-client.js';
import type {
  Clock,
  EvalClient,
  SlotRef,
  Store,
  StoreCheckOptions,
  StoreEntry,
  StoreMode,
  StoreSettleEntry,
  StoreVerdict,
} from '../types.js';
import { isLogger, type SluiceLogger } from '../warn.js';

export { isNoScriptError };

/** Options of one `RedisStore.decide`: the record of an idempotent request. */
export type RedisStoreCheckOptions = StoreCheckOptions;

/** Options of `RedisStore`. */
export interface RedisStoreOptions {
  /**
   * The Redis client: an ioredis `Redis` or `Cluster`, or any `EvalClient`. Give this or
   * `transport`, not both.
   */
  readonly client?: EvalClient;
  /**
   * How the store reaches Redis, instead of `client`: `ioredisTransport`,
   * `ioredisClusterTransport`, `nodeRedisTransport`, `restTransport`, or your own.
   */
  readonly transport?: ScriptTransport;
  /**
   * Tests only: pass this clock's time to the script instead of letting it read Redis `TIME`.
   * Production leaves it unset so every instance shares Redis's clock.
   */
  readonly clock?: Clock;
  /** The store owns the client: `close()` quits it. Set by `createRedisStore` for clients it built. */
  readonly ownsClient?: boolean;
  /**
   * Most checks sent in one script call. Checks issued before the store flushes (see
   * `scheduleFlush`) travel together; each stays one atomic, all-or-nothing decision, run in
   * the order issued. `1` sends every check on its own. Default 128.
   */
  readonly maxBatch?: number;
  /**
   * Whether checks whose keys lie in different hash slots may share a call. Only a standalone
   * Redis allows that; on Redis Cluster one script call must stay in one slot. Default: what
   * the transport says; for a `client`, true for an ioredis standalone client (`isCluster ===
   * false`), false for anything else (ioredis `Cluster`, or a client this store cannot
   * recognize), where only checks of one slot share a call.
   */
  readonly batchAcrossSlots?: boolean;
  /**
   * Longest a check waits in a batch for the scheduled flush: a check that finds its batch's
   * first check this old sends the batch at once. Bounds the delay batching adds while a busy
   * process reads many requests in one event-loop turn. Default 2 ms.
   */
  readonly maxBatchWaitMs?: number;
  /**
   * When the checks collected so far are sent: called with the flush once per batch.
   * Default: after the current microtask queue (`queueMicrotask`), which works on every
   * runtime. `createRedisStore` from `@sluice/core/node` passes `setImmediate`, so the checks
   * of every request handled in one event-loop turn share a call.
   */
  readonly scheduleFlush?: (flush: () => void) => void;
  /**
   * Where the `SLUICE_REDIS_ALLKEYS_EVICTION` warning goes (see the adapters' `logger` option).
   * Unset: `console.warn`, once per process.
   */
  readonly logger?: SluiceLogger;
}

/** Defaults of `RedisStore`: a view of `OPTION_DEFAULTS`, where every default lives. */
export const REDIS_STORE_DEFAULTS = Object.freeze({
  maxBatch: OPTION_DEFAULTS.redisMaxBatch,
  maxBatchWaitMs: OPTION_DEFAULTS.redisMaxBatchWaitMs,
  scheduleFlush: (flush: () => void): void => queueMicrotask(flush),
});

/** The transport of `options`, checked: a `transport`, or one built for `client`. */
function transportOf(options: RedisStoreOptions): ScriptTransport {
  if (options.transport !== undefined) {
    if (options.client !== undefined) {
      throw new TypeError('RedisStore: give "client" or "transport", not both');
    }
    if (!isScriptTransport(options.transport)) {
      throw new TypeError(
        'RedisStore: "transport" must offer run() and a boolean singleSlot (e.g. ioredisTransport(client))',
      );
    }
    return options.transport;
  }
  const client = options.client;
  if (
    typeof client !== 'object' ||
    client === null ||
    typeof client.evalsha !== 'function' ||
    typeof client.eval !== 'function'
  ) {
    throw new TypeError('RedisStore: "client" must offer evalsha() and eval() (an ioredis Redis or Cluster)');
  }
  return evalClientTransport(client, options.batchAcrossSlots);
}

/** Checks the batching options and fills in the defaults. */
function batchingOf(options: RedisStoreOptions) {
  const maxBatch = options.maxBatch ?? REDIS_STORE_DEFAULTS.maxBatch;
  if (!Number.isInteger(maxBatch) || maxBatch < 1) {
    throw new TypeError(`RedisStore: "maxBatch" must be a positive integer, got ${String(options.maxBatch)}`);
  }
  const maxBatchWaitMs = options.maxBatchWaitMs ?? REDIS_STORE_DEFAULTS.maxBatchWaitMs;
  if (
    typeof maxBatchWaitMs !== 'number' ||
    !(maxBatchWaitMs >= 0) ||
    maxBatchWaitMs === Number.POSITIVE_INFINITY
  ) {
    throw new TypeError(
      `RedisStore: "maxBatchWaitMs" must be a finite number of milliseconds >= 0, got ${String(options.maxBatchWaitMs)}`,
    );
  }
  if (options.batchAcrossSlots !== undefined && typeof options.batchAcrossSlots !== 'boolean') {
    throw new TypeError(
      `RedisStore: "batchAcrossSlots" must be a boolean, got ${String(options.batchAcrossSlots)}`,
    );
  }
  if (options.scheduleFlush !== undefined && typeof options.scheduleFlush !== 'function') {
    throw new TypeError('RedisStore: "scheduleFlush" must be a function that calls its argument later');
  }
  return {
    maxBatch,
    maxBatchWaitMs,
    singleSlot: options.batchAcrossSlots === undefined ? undefined : !options.batchAcrossSlots,
    scheduleFlush: options.scheduleFlush ?? REDIS_STORE_DEFAULTS.scheduleFlush,
  };
}

/** A Store backed by Redis (standalone or Cluster) through the decide script. */
export class RedisStore implements Store {
  /** Store kind, for logs and metrics. */
  readonly kind = 'redis';
  /** The client this store calls (the `client` given, or the one behind the transport). */
  readonly client: unknown;
  /** How this store reaches Redis. */
  readonly transport: ScriptTransport;
  private readonly clock: Clock | undefined;
  private readonly ownsClient: boolean;
  private readonly batcher: ScriptBatcher;
  /** The releases of concurrency slots, batched per event-loop turn. */
  private readonly releases: SlotReleases;
  private readonly logger: SluiceLogger | undefined;
  /** `maxmemory-policy`, read once at the first check (warns on allkeys-*; empty without CONFIG). */
  private memoryPolicies: Promise<string[]> | undefined;

  /** @param options the client or transport, batching limits, and a clock for tests */
  constructor(options: RedisStoreOptions) {
    if (typeof options !== 'object' || options === null) {
      throw new TypeError(
        'RedisStore: "client" must offer evalsha() and eval() (an ioredis Redis or Cluster)',
      );
    }
    const transport = transportOf(options);
    if (options.clock !== undefined && typeof options.clock !== 'function') {
      throw new TypeError('RedisStore: "clock" must be a function returning milliseconds');
    }
    const batching = batchingOf(options);
    this.batcher = new ScriptBatcher({ transport, ...batching });
    this.releases = new SlotReleases(transport, batching.singleSlot ?? transport.singleSlot, batching);
    this.transport = transport;
    this.client = options.client ?? transport.client;
    this.clock = options.clock;
    this.ownsClient = options.ownsClient === true;
    if (options.logger !== undefined && !isLogger(options.logger)) {
      throw new TypeError(
        'RedisStore: "logger" must be an object with warn(entry) (and optionally error(entry))',
      );
    }
    this.logger = options.logger;
  }

  /**
   * Decides every entry in one atomic script run; all or nothing. With `requestKey` and
   * `requestTtlMs`, a consume is idempotent: a recorded request replays its verdicts and
   * charges nothing; otherwise its verdicts are recorded (in the same script run).
   */
  decide(
    entries: readonly StoreEntry[],
    mode: StoreMode,
    options?: RedisStoreCheckOptions,
  ): Promise<StoreVerdict[]> {
    this.memoryPolicies ??= warnOnEvictingPolicy(this.client, this.logger);
    try {
      if (entries.length === 0) return Promise.resolve([]);
      const requestKey = options?.requestKey;
      const requestTtlMs = options?.requestTtlMs;
      if ((requestKey === undefined) !== (requestTtlMs === undefined)) {
        throw new TypeError('RedisStore: "requestKey" and "requestTtlMs" go together');
      }
      return this.batcher.decide(entries, mode, encodeScriptNow(this.clock?.()), requestKey, requestTtlMs);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Settles a reservation: every entry in one atomic settle script call (lua/settle.lua; EVALSHA,
   * EVAL on NOSCRIPT). See `Store.settle`. Checks still waiting in a batch go out first. With
   * Redis TIME, `reservedAgoMs` is taken 1 ms longer and `answeredAgoMs` 1 ms shorter (the
   * caller's clock counts whole ms), so the moment Redis charged the reservation stays between
   * the two: a window algorithm settles a reservation within about a millisecond and a round trip
   * after a window boundary as one of the window before (a no-op), and a sliding log may take a
   * refund off a record admitted within that time after the reservation.
   */
  async settle(entries: readonly StoreSettleEntry[]): Promise<boolean[]> {
    if (entries.length === 0) return [];
    // With Redis TIME (microseconds) against the caller's clock (whole ms, as Date.now), the
    // reservation is put between 1 ms before the check was asked and 1 ms after it was answered.
    const widened = this.clock === undefined ? entries.map(widenedByOneMs) : entries;
    const { keys, args } = encodeSettle(widened, encodeScriptNow(this.clock?.()));
    this.batcher.flush();
    return decodeSettleReply(await this.transport.run(SETTLE_SCRIPT, keys, args), entries);
  }

  /**
   * Frees concurrency slots (lua/slots.lua). Idempotent: a slot not held is left alone. One flag per
   * slot: true where it was held. Batched as checks are: the releases of one event-loop turn go in
   * one call (one per hash slot on Redis Cluster), each slot's release atomic.
   */
  releaseSlots(slots: readonly SlotRef[]): Promise<boolean[]> {
    try {
      return this.releases.release(slots, encodeScriptNow(this.clock?.()));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Renews concurrency slots to Redis's now plus their policy's lease (`windowMs`), only where
   * still held: a slot that ran out or was freed is never taken again. One call per hash tag; one
   * flag per slot: false where it was lost.
   */
  renewSlots(slots: readonly SlotRef[]): Promise<boolean[]> {
    this.batcher.flush();
    return runSlotsScript(this.transport, slots, 'renew', encodeScriptNow(this.clock?.()));
  }

  /** Decide-script calls, the checks they carried, and NOSCRIPT reloads, for metrics. */
  get scriptStats(): ScriptStats {
    return {
      calls: this.batcher.calls,
      decisions: this.batcher.decisions,
      noscriptReloads: this.transport.noscriptReloads ?? 0,
    };
  }

  /** Redis's `maxmemory-policy` per node, read once (empty when CONFIG is not allowed). */
  maxmemoryPolicies(): Promise<string[]> {
    this.memoryPolicies ??= warnOnEvictingPolicy(this.client, this.logger);
    return this.memoryPolicies;
  }

  /** Deletes the state behind `keys` (keys of one identity: one slot on Cluster). */
  async reset(keys: readonly string[]): Promise<void> {
    if (keys.length === 0) return;
    // Checks issued before the reset go first, so the reset is not undone by them.
    this.batcher.flush();
    await this.transport.run(RESET_SCRIPT, keys, []);
  }

  /** Closes the client when this store owns it (`createRedisStore` from a URL or nodes); else does nothing. */
  async close(): Promise<void> {
    // Checks still waiting in a batch go out first: a client's QUIT follows its queued commands.
    this.batcher.flush();
    if (this.ownsClient) await this.transport.close?.();
  }
}

/** A settle entry whose reservation may lie 1 ms further either way (whole ms against Redis TIME). */
function widenedByOneMs(entry: StoreSettleEntry): StoreSettleEntry {
  const answeredAgoMs = entry.answeredAgoMs ?? entry.reservedAgoMs;
  return { ...entry, reservedAgoMs: entry.reservedAgoMs + 1, answeredAgoMs: Math.max(0, answeredAgoMs - 1) };
}
