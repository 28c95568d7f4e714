/**
 * The script batcher: checks issued close together travel in ONE call of the decide script
 * (one round trip, one clock reading, one reply), each still its own atomic, all-or-nothing
 * decision, run in the order issued. Where the transport says a call must stay in one hash
 * slot (Redis Cluster), only checks of one slot share a call.
 *
 * Two calls in flight per group, not one growing batch: the connection pipelines, so while
 * Redis runs one call the process handles the other's answers and issues the next checks, and
 * both sides work at once. A flush whose group ran dry (its last call was answered and none is
 * in flight) sends its checks as two calls, the first half and then the rest (in the order
 * issued: one connection runs them in turn); a flush with one call in flight, or of a group
 * idle since its start, as one call; with two in flight the checks wait and go as one call when
 * an answer comes back, so a call carries what is waiting, not what arrived in one tick. They
 * wait at most `maxBatchWaitMs`: a connection whose calls are never answered (a silent Redis)
 * still gets every check, and each ends by its own deadline in the limiter. All this only over a
 * transport that says it pipelines (`pipelines: true`); over any other (Redis over HTTP, where
 * each call is a request of its own, and Web runtimes, where a request must never wait on
 * another request's I/O) every flush goes out at once as one call. Web-standard.
 */

import { monotonicNow } from '../monotonic.js';
import type { StoreEntry, StoreMode, StoreVerdict } from '../types.js';
import { hashSlotOf } from './key-slot.js';
import { decodeVerdicts, replyItemsOf, ScriptCall } from './script.js';
import type { ScriptTransport } from './transport.js';

/** How a {@link ScriptBatcher} cuts and sends its batches (validated by the store). */
export interface ScriptBatcherOptions {
  /** Where calls go. */
  readonly transport: ScriptTransport;
  /** Only checks of one hash slot share a call (default: what the transport says). */
  readonly singleSlot?: boolean;
  /** Most checks in one call. */
  readonly maxBatch: number;
  /** A check that finds its batch this old (ms) sends the batch at once. */
  readonly maxBatchWaitMs: number;
  /** Called with the flush once per batch; sends every open batch when it calls it. */
  readonly scheduleFlush: (flush: () => void) => void;
}

/** A check waiting in a batch for the script's reply (with what its call needs to encode it again). */
interface PendingCheck {
  readonly entries: readonly StoreEntry[];
  readonly mode: StoreMode;
  readonly requestKey: string | undefined;
  readonly requestTtlMs: number | undefined;
  readonly resolve: (verdicts: StoreVerdict[]) => void;
  readonly reject: (error: unknown) => void;
}

/** Most decide-script calls of one group in flight at once: one in Redis, one being answered. */
export const CALLS_IN_FLIGHT = 2;

/** Checks bound for one script call. */
interface Batch {
  /** The slot of its keys (0 when any keys may share a call). */
  readonly group: number;
  /** KEYS and ARGV, built as the checks arrive. */
  readonly call: ScriptCall;
  readonly checks: PendingCheck[];
  /** When the first check joined (`monotonicNow`). */
  readonly openedAtMs: number;
}

const SHAPE_ERROR = 'store: unexpected decide script reply (shape)';

/** Collects checks into decide-script calls and hands each check its own verdicts. */
export class ScriptBatcher {
  private readonly transport: ScriptTransport;
  private readonly singleSlot: boolean;
  /** Whether the transport pipelines: two calls in flight and held checks; otherwise each flush at once. */
  private readonly pipelines: boolean;
  private readonly maxBatch: number;
  private readonly maxBatchWaitMs: number;
  private readonly scheduleFlush: (flush: () => void) => void;
  /** The open batch per group. */
  private readonly open = new Map<number, Batch>();
  /** Calls sent and not yet answered, per group (absent: none). */
  private readonly inFlight = new Map<number, number>();
  /** The groups whose last answered call left none in flight: their next flush goes as two calls. */
  private readonly drained = new Set<number>();
  private flushScheduled = false;
  /** The timer that sends the checks held behind two calls in flight once they waited `maxBatchWaitMs`. */
  private holdTimer: ReturnType<typeof setTimeout> | undefined = undefined;
  /** Calls of the decide script sent, and the checks they carried (for `RedisStore.scriptStats`). */
  calls = 0;
  decisions = 0;

  /** @param options the transport and the batching limits */
  constructor(options: ScriptBatcherOptions) {
    this.transport = options.transport;
    this.singleSlot = options.singleSlot ?? options.transport.singleSlot;
    this.pipelines = options.transport.pipelines === true;
    this.maxBatch = options.maxBatch;
    this.maxBatchWaitMs = options.maxBatchWaitMs;
    this.scheduleFlush = options.scheduleFlush;
  }

  /**
   * Adds one check to its group's open batch and resolves with its verdicts, one per entry.
   * Throws (adding nothing) when the check is invalid; `nowArg` is from `encodeScriptNow`.
   */
  decide(
    entries: readonly StoreEntry[],
    mode: StoreMode,
    nowArg: string,
    requestKey: string | undefined,
    requestTtlMs: number | undefined,
  ): Promise<StoreVerdict[]> {
    const firstKey = (entries[0] as StoreEntry).key;
    const group = this.singleSlot ? hashSlotOf(typeof firstKey === 'string' ? firstKey : '') : 0;
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
      target.checks.push({ entries, mode, requestKey, requestTtlMs, resolve, reject });
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

  /** Sends every open batch now, however many calls are in flight (before a reset or a close, so those come after). */
  flush(): void {
    this.flushScheduled = false;
    this.sendHeld();
  }

  /**
   * The scheduled flush (bound once: no closure per batch): each open batch goes out as two
   * calls when its group ran dry, as one otherwise; with two calls of its group in flight it
   * waits for an answer (`answered`).
   */
  private readonly flushAll = (): void => {
    this.flushScheduled = false;
    for (const batch of this.open.values()) {
      const inFlight = this.inFlight.get(batch.group) ?? 0;
      if (!this.pipelines) {
        this.send(batch);
      } else if (inFlight >= CALLS_IN_FLIGHT) {
        this.holdTimer ??= setTimeout(this.sendHeld, this.maxBatchWaitMs);
      } else if (inFlight === 0 && batch.checks.length > 1 && this.drained.has(batch.group)) {
        this.sendHalves(batch);
      } else {
        this.send(batch);
      }
    }
  };

  /** Sends every open batch, however many calls are in flight (bound once: a timer's callback). */
  private readonly sendHeld = (): void => {
    if (this.holdTimer !== undefined) clearTimeout(this.holdTimer);
    this.holdTimer = undefined;
    for (const batch of this.open.values()) this.send(batch);
  };

  /** Sends a batch as two calls, its first half and then the rest (each encoded again). */
  private sendHalves(batch: Batch): void {
    this.open.delete(batch.group);
    const half = batch.checks.length >> 1;
    this.send(this.batchOf(batch, batch.checks.slice(0, half)));
    this.send(this.batchOf(batch, batch.checks.slice(half)));
  }

  /** A batch of some checks of `batch` (already validated: adding them again throws nothing). */
  private batchOf(batch: Batch, checks: PendingCheck[]): Batch {
    const call = new ScriptCall(batch.call.nowArg);
    for (const check of checks) call.add(check.entries, check.mode, check.requestKey, check.requestTtlMs);
    return { group: batch.group, call, checks, openedAtMs: batch.openedAtMs };
  }

  /** A call of `group` was answered: the checks waiting for room in its pipeline go now. */
  private answered(group: number): void {
    const left = (this.inFlight.get(group) ?? 1) - 1;
    if (left > 0) this.inFlight.set(group, left);
    else {
      this.inFlight.delete(group);
      this.drained.add(group);
    }
    const waiting = this.open.get(group);
    if (waiting !== undefined && left < CALLS_IN_FLIGHT) this.send(waiting);
  }

  /** One call of the call's decide script; a transport that throws instead of rejecting rejects here. */
  private run(call: ScriptCall): Promise<unknown> {
    try {
      return this.transport.run(call.script(), call.keys, call.args());
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Sends one batch and settles its checks. */
  private send(batch: Batch): void {
    if (this.open.get(batch.group) === batch) this.open.delete(batch.group);
    const { call, checks, group } = batch;
    this.calls++;
    this.decisions += checks.length;
    this.inFlight.set(group, (this.inFlight.get(group) ?? 0) + 1);
    this.drained.delete(group);
    this.run(call).then(
      (reply) => {
        this.answered(group);
        if (!Array.isArray(reply) || reply.length !== call.replyItems) {
          const error = new Error(SHAPE_ERROR);
          for (const check of checks) check.reject(error);
          return;
        }
        let offset = 0;
        for (const check of checks) {
          try {
            check.resolve(decodeVerdicts(reply, check.entries, offset));
          } catch (error) {
            check.reject(error);
          }
          offset += replyItemsOf(check.entries);
        }
      },
      (error: unknown) => {
        this.answered(group);
        for (const check of checks) check.reject(error);
      },
    );
  }
}
