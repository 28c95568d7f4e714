/**
 * Releases of concurrency slots, batched as checks are (script-batcher.ts): the releases asked in
 * one event-loop turn go out together in the slots script, one call for a single Redis and one per
 * hash slot on Redis Cluster, instead of one call per request. Web-standard: no `node:`.
 */
import { assertValidSlots } from '../algorithms/validate.js';
import type { SlotRef } from '../types.js';
import { runSlotsScript } from './slots-script.js';
import type { ScriptTransport } from './transport.js';

/** One caller's releases in the open batch: its slots' positions and where its flags go. */
interface PendingRelease {
  readonly from: number;
  readonly count: number;
  resolve(flags: boolean[]): void;
  reject(error: unknown): void;
}

/** The releases collected for the next call, all at one explicit time (or all at Redis TIME). */
interface ReleaseBatch {
  readonly nowArg: string;
  readonly slots: SlotRef[];
  readonly callers: PendingRelease[];
}

/** Collects releases into slots-script calls and hands each caller its own flags. */
export class SlotReleases {
  #open: ReleaseBatch | undefined;

  /**
   * @param transport where the script goes
   * @param perHashSlot one call per hash slot (Redis Cluster), else one call for the batch
   * @param batching `maxBatch`, the most slots in one batch (sent at once when reached), and
   *   `scheduleFlush`, which runs the flush later in this turn of the event loop, as for checks
   */
  constructor(
    private readonly transport: ScriptTransport,
    private readonly perHashSlot: boolean,
    private readonly batching: {
      readonly maxBatch: number;
      readonly scheduleFlush: (flush: () => void) => void;
    },
  ) {}

  /**
   * Adds `slots` (validated now: a bad slot throws, adding nothing) to the open batch and resolves
   * with one flag per slot, true where it was held; `nowArg` is from `encodeScriptNow`.
   */
  release(slots: readonly SlotRef[], nowArg: string): Promise<boolean[]> {
    assertValidSlots(slots);
    if (slots.length === 0) return Promise.resolve([]);
    // One clock reading per call: a release at another explicit time goes in a new call.
    if (this.#open !== undefined && this.#open.nowArg !== nowArg) this.flush();
    const fresh = this.#open === undefined;
    const batch: ReleaseBatch = this.#open ?? { nowArg, slots: [], callers: [] };
    this.#open = batch;
    const from = batch.slots.length;
    for (const slot of slots) batch.slots.push(slot);
    const flags = new Promise<boolean[]>((resolve, reject) => {
      batch.callers.push({ from, count: slots.length, resolve, reject });
    });
    if (batch.slots.length >= this.batching.maxBatch) this.flush();
    else if (fresh) this.batching.scheduleFlush(this.flush);
    return flags;
  }

  /** Sends the open batch now (bound once: no closure per batch). */
  readonly flush = (): void => {
    const batch = this.#open;
    if (batch === undefined) return;
    this.#open = undefined;
    const { slots, callers, nowArg } = batch;
    runSlotsScript(this.transport, slots, 'release', nowArg, this.perHashSlot).then(
      (flags) => {
        for (const caller of callers) caller.resolve(flags.slice(caller.from, caller.from + caller.count));
      },
      (error: unknown) => {
        for (const caller of callers) caller.reject(error);
      },
    );
  };
}
