/**
 * `RedisStore`: every check is decided by the decide script (EVALSHA, EVAL after NOSCRIPT),
 * one atomic decision per check. Checks issued close together travel in ONE script call (a
 * batch: one round trip, one clock reading, one reply); on Redis Cluster only checks whose
 * keys share a hash tag are batched, so every call stays in one slot. Works with anything
 * that offers `evalsha` and `eval` (`EvalClient`): ioredis `Redis` and `Cluster` as they are,
 * node-redis or an HTTP client through a small wrapper. Web-standard.
 */
import { monotonicNow } from '../monotonic.js';
import { warnOnEvictingPolicy } from '../redis/memory-policy.js';
import {
  DECIDE_SCRIPT,
  decodeVerdicts,
  encodeScriptNow,
  REPLY_ITEMS_PER_ENTRY,
  RESET_SCRIPT,
  ScriptCall,
} from '../redis/script.js';
import type {
  Clock,
  EvalClient,
  Store,
  StoreCheckOptions,
  StoreEntry,
  StoreMode,
  StoreVerdict,
} from '../types.js';

/** Options of one `RedisStore.decide`: the record of an idempotent request. */
export type RedisStoreCheckOptions = StoreCheckOptions;

/** Options of `RedisStore`. */
export interface RedisStoreOptions {
  /** The Redis client: an ioredis `Redis` or `Cluster`, or any `EvalClient`. */
  readonly client: EvalClient;
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
   * Whether checks whose keys carry different hash tags may share a call. Only a standalone
   * Redis allows that; on Redis Cluster one script call must stay in one slot. Default: true
   * for an ioredis standalone client (`isCluster === false`), false for anything else
   * (ioredis `Cluster`, or a client this store cannot recognize), where only checks of one
   * hash tag share a call.
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
}

/** Defaults of `RedisStore`, in one place. */
export const REDIS_STORE_DEFAULTS = Object.freeze({
  maxBatch: 128,
  maxBatchWaitMs: 2,
  scheduleFlush: (flush: () => void): void => queueMicrotask(flush),
});

/** A check waiting in a batch for the script's reply. */
interface PendingCheck {
  readonly entries: readonly StoreEntry[];
  readonly resolve: (verdicts: StoreVerdict[]) => void;
  readonly reject: (error: unknown) => void;
}

/** Checks bound for one script call. */
interface Batch {
  readonly group: string;
  /** KEYS and ARGV, built as the checks arrive. */
  readonly call: ScriptCall;
  readonly checks: PendingCheck[];
  /** When the first check joined (`monotonicNow`). */
  readonly openedAtMs: number;
}

/** The hash tag of a key as Redis Cluster reads it (`{...}`, non-empty), else the whole key. */
function hashTagOf(key: string): string {
  const open = key.indexOf('{');
  if (open >= 0) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) return key.slice(open + 1, close);
  }
  return key;
}

/** True when a Redis error says the script is not in the server's cache. */
export function isNoScriptError(error: unknown): boolean {
  const message =
    typeof error === 'object' && error !== null ? (error as { message?: unknown }).message : error;
  return typeof message === 'string' && message.includes('NOSCRIPT');
}

/** A Store backed by Redis (standalone or Cluster) through the decide script. */
export class RedisStore implements Store {
  /** Store kind, for logs and metrics. */
  readonly kind = 'redis';
  /** The client this store calls. */
  readonly client: EvalClient;
  private readonly clock: Clock | undefined;
  private readonly ownsClient: boolean;
  private readonly maxBatch: number;
  private readonly maxBatchWaitMs: number;
  /** Batch per group ('' on standalone Redis; the hash tag on Cluster). */
  private readonly open = new Map<string, Batch>();
  private flushScheduled = false;
  /** Only checks sharing a hash tag may share a call (one slot). */
  private readonly perSlot: boolean;
  private readonly scheduleFlush: (flush: () => void) => void;
  /** `maxmemory-policy`, read once at the first check (warns on allkeys-*; empty without CONFIG). */
  private memoryPolicies: Promise<string[]> | undefined;

  /** @param options the client, and a clock for tests */
  constructor(options: RedisStoreOptions) {
    const client = (options as RedisStoreOptions | undefined)?.client;
    if (
      typeof client !== 'object' ||
      client === null ||
      typeof client.evalsha !== 'function' ||
      typeof client.eval !== 'function'
    ) {
      throw new TypeError(
        'RedisStore: "client" must offer evalsha() and eval() (an ioredis Redis or Cluster)',
      );
    }
    if (options.clock !== undefined && typeof options.clock !== 'function') {
      throw new TypeError('RedisStore: "clock" must be a function returning milliseconds');
    }
    const maxBatch = options.maxBatch ?? REDIS_STORE_DEFAULTS.maxBatch;
    if (!Number.isInteger(maxBatch) || maxBatch < 1) {
      throw new TypeError(
        `RedisStore: "maxBatch" must be a positive integer, got ${String(options.maxBatch)}`,
      );
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
    this.client = client;
    this.clock = options.clock;
    this.ownsClient = options.ownsClient === true;
    this.maxBatch = maxBatch;
    this.maxBatchWaitMs = maxBatchWaitMs;
    this.perSlot = !(options.batchAcrossSlots ?? (client as { isCluster?: unknown }).isCluster === false);
    this.scheduleFlush = options.scheduleFlush ?? REDIS_STORE_DEFAULTS.scheduleFlush;
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
    this.memoryPolicies ??= warnOnEvictingPolicy(this.client);
    try {
      return this.enqueue(entries, mode, options);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Redis's `maxmemory-policy` per node, read once (empty when CONFIG is not allowed). */
  maxmemoryPolicies(): Promise<string[]> {
    this.memoryPolicies ??= warnOnEvictingPolicy(this.client);
    return this.memoryPolicies;
  }

  /** Adds a check to its group's open batch (throws on bad input, before anything is added). */
  private enqueue(
    entries: readonly StoreEntry[],
    mode: StoreMode,
    options: RedisStoreCheckOptions | undefined,
  ): Promise<StoreVerdict[]> {
    if (entries.length === 0) return Promise.resolve([]);
    const requestKey = options?.requestKey;
    const requestTtlMs = options?.requestTtlMs;
    if ((requestKey === undefined) !== (requestTtlMs === undefined)) {
      throw new TypeError('RedisStore: "requestKey" and "requestTtlMs" go together');
    }
    const nowArg = encodeScriptNow(this.clock?.());
    const firstKey = (entries[0] as StoreEntry).key;
    const group = this.perSlot ? hashTagOf(typeof firstKey === 'string' ? firstKey : '') : '';
    let batch = this.open.get(group);
    if (batch !== undefined && batch.call.nowArg !== nowArg) {
      // One clock reading per call: a check made at another explicit time goes in a new call.
      this.send(batch);
      batch = undefined;
    }
    const fresh = batch === undefined;
    const target: Batch = batch ?? {
      group,
      call: new ScriptCall(nowArg),
      checks: [],
      openedAtMs: monotonicNow(),
    };
    target.call.add(entries, mode, requestKey, requestTtlMs); // validates before it adds
    const verdicts = new Promise<StoreVerdict[]>((resolve, reject) => {
      target.checks.push({ entries, resolve, reject });
    });
    if (
      target.checks.length >= this.maxBatch ||
      (!fresh && monotonicNow() - target.openedAtMs >= this.maxBatchWaitMs)
    ) {
      this.send(target);
    } else if (fresh) {
      this.open.set(group, target);
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        this.scheduleFlush(this.flushAll);
      }
    }
    return verdicts;
  }

  /** Sends every open batch (bound once: no closure per batch). */
  private readonly flushAll = (): void => {
    this.flushScheduled = false;
    for (const batch of this.open.values()) this.send(batch);
  };

  /** Sends one batch and settles its checks. */
  private send(batch: Batch): void {
    if (this.open.get(batch.group) === batch) this.open.delete(batch.group);
    this.call(batch).then(
      (reply) => {
        if (!Array.isArray(reply) || reply.length !== batch.call.replyItems) {
          const error = new Error('store: unexpected decide script reply (shape)');
          for (const check of batch.checks) check.reject(error);
          return;
        }
        let offset = 0;
        for (const check of batch.checks) {
          try {
            check.resolve(decodeVerdicts(reply, check.entries, offset));
          } catch (error) {
            check.reject(error);
          }
          offset += check.entries.length * REPLY_ITEMS_PER_ENTRY;
        }
      },
      (error: unknown) => {
        for (const check of batch.checks) check.reject(error);
      },
    );
  }

  /** One EVALSHA of the decide script for `batch`. */
  private call(batch: Batch): Promise<unknown> {
    return this.evalScript(DECIDE_SCRIPT, batch.call.keys.length, batch.call.params());
  }

  /** EVALSHA of `script`; EVAL when Redis does not have it (restart, SCRIPT FLUSH). */
  private async evalScript(
    script: { readonly source: string; readonly sha1: string },
    numKeys: number,
    params: readonly string[],
  ): Promise<unknown> {
    try {
      return await this.client.evalsha(script.sha1, numKeys, ...params);
    } catch (error) {
      if (!isNoScriptError(error)) throw error;
      return await this.client.eval(script.source, numKeys, ...params);
    }
  }

  /** Deletes the state behind `keys` (keys of one identity: one slot on Cluster). */
  async reset(keys: readonly string[]): Promise<void> {
    if (keys.length === 0) return;
    // Checks issued before the reset go first, so the reset is not undone by them.
    if (this.open.size > 0) this.flushAll();
    await this.evalScript(RESET_SCRIPT, keys.length, keys);
  }

  /** Quits the client when this store built it (`createRedisStore` from a URL or nodes); else does nothing. */
  async close(): Promise<void> {
    // Checks still waiting in a batch go out first: a client's QUIT follows its queued commands.
    if (this.open.size > 0) this.flushAll();
    if (!this.ownsClient) return;
    const quit = (this.client as { quit?: () => Promise<unknown> }).quit;
    if (typeof quit === 'function') await quit.call(this.client);
  }
}
