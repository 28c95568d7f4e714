/**
 * The decide script (lua/decide.lua + the algorithm files, embedded at build time) and the codec
 * between `StoreEntry[]` and its KEYS/ARGV/reply (one or more decisions per call, each atomic).
 * KEYS: per decision its entries' keys, ban keys, request record key. ARGV: nowMs, the policy
 * table, then per decision its short form (policy indices joined by '+': one unit each) or mode,
 * requestTtlMs, entryCount and per entry policy index and cost (`'<cost>><leastCost>'` for a lease
 * take, `'1@<slotId>'` for a concurrency entry, `'<cost>~<maxWaitMs>'` for a waiting entry).
 * Reply: four integers per entry (allowed, remaining, resetMs, retryAfterMs; allowed with a
 * retryAfterMs > 0: a waiting entry's reserved turn, `waitMs`), five for a lease take
 * (`chargedUnits`) and a concurrency entry (`reclaimed`). lua/decide.lua holds the full contract.
 * A reply's allowed 2 is a ban. Web-standard: no `node:`.
 */

import { holdsSlots } from '../algorithms/concurrency.js';
import { assertValidEntries, waitsForTurn } from '../algorithms/validate.js';
import {
  DECIDE_FEATURE_BITS,
  DECIDE_SCRIPT_SHA1,
  DECIDE_SCRIPT_SOURCE,
  DECIDE_SHAPES,
  RESET_SCRIPT_SHA1,
  RESET_SCRIPT_SOURCE,
} from '../generated/scripts.js';
import { banKeyOf } from '../keys/build-keys.js';
import type { CompiledPolicy, StoreEntry, StoreMode, StoreVerdict } from '../types.js';
import type { ScriptSource } from './transport.js';

/** The decide script: Lua source and its SHA1 (hex), for EVALSHA with EVAL as fallback. */
export const DECIDE_SCRIPT: { readonly source: string; readonly sha1: string } = Object.freeze({
  source: DECIDE_SCRIPT_SOURCE,
  sha1: DECIDE_SCRIPT_SHA1,
});

/** One shape of the decide script: the algorithm it holds alone (null: every one) and the features it carries. */
export interface DecideShape extends ScriptSource {
  /** 'all', 'all/plain', '<algorithm>', '<algorithm>/plain' (packages/core/scripts/lua-shapes.mjs). */
  readonly name: string;
  readonly algorithm: string | null;
  /** Mask of `DECIDE_FEATURE` bits. */
  readonly features: number;
}

/**
 * Every shape of the decide script, generated at build from the same lua/ files (the full one
 * first): a call runs the smallest one that holds its algorithm and carries its features.
 */
export const DECIDE_SCRIPTS: readonly DecideShape[] = Object.freeze(
  DECIDE_SHAPES.map((shape) => Object.freeze(shape)),
);

/** The decide features a shape may leave out, as the bits of a call's feature mask. */
export const DECIDE_FEATURE: Readonly<{
  shadow: number;
  bans: number;
  slots: number;
  waits: number;
  leases: number;
  records: number;
}> = Object.freeze({
  shadow: DECIDE_FEATURE_BITS.shadow as number,
  bans: DECIDE_FEATURE_BITS.bans as number,
  slots: DECIDE_FEATURE_BITS.slots as number,
  waits: DECIDE_FEATURE_BITS.waits as number,
  leases: DECIDE_FEATURE_BITS.leases as number,
  records: DECIDE_FEATURE_BITS.records as number,
});

/** Bits of every feature: a mask no shape but the full one's may lack. */
const ALL_FEATURES = Object.values(DECIDE_FEATURE_BITS).reduce((mask, bit) => mask | bit, 0);

/** The shape picked per algorithm (null: a mix) and feature mask, filled on first use. */
const shapeCache = new Map<string | null, DecideShape[]>();

/** Bits set in a mask. */
function bitCount(mask: number): number {
  let n = 0;
  for (let m = mask; m !== 0; m &= m - 1) n++;
  return n;
}

/** The smallest shape holding `algorithm` (null: a mix, every algorithm) with every feature of `features`. */
function pickShape(algorithm: string | null, features: number): DecideShape {
  let best: DecideShape | undefined;
  for (const shape of DECIDE_SCRIPTS) {
    if (shape.algorithm !== algorithm || (shape.features & features) !== features) continue;
    if (best === undefined || bitCount(shape.features) < bitCount(best.features)) best = shape;
  }
  if (best === undefined && algorithm !== null) return pickShape(null, features);
  return best ?? (DECIDE_SCRIPTS[0] as DecideShape);
}

/**
 * The decide script for a call whose policies all use `algorithm` (null: several) and whose
 * decisions use the decide features in `features` (a mask of `DECIDE_FEATURE` bits).
 */
export function decideScriptOf(algorithm: string | null, features: number = ALL_FEATURES): DecideShape {
  let byMask = shapeCache.get(algorithm);
  if (byMask === undefined) {
    byMask = [];
    shapeCache.set(algorithm, byMask);
  }
  let shape = byMask[features];
  if (shape === undefined) {
    shape = pickShape(algorithm, features);
    byMask[features] = shape;
  }
  return shape;
}

/**
 * The decide script `RedisStore` sends for one decision of these entries in `mode` (with a
 * request record when `requestTtlMs` is given): see `ScriptCall.script`.
 */
export function decideScriptFor(
  entries: readonly StoreEntry[],
  mode: StoreMode = 'consume',
  requestTtlMs?: number,
): ScriptSource {
  const call = new ScriptCall('');
  call.add(entries, mode, undefined, requestTtlMs);
  return call.script();
}

/**
 * The reset script (lua/reset.lua): `DEL` of every key in KEYS, no ARGV; replies with how
 * many existed. For stores that reach Redis only through eval.
 */
export const RESET_SCRIPT: { readonly source: string; readonly sha1: string } = Object.freeze({
  source: RESET_SCRIPT_SOURCE,
  sha1: RESET_SCRIPT_SHA1,
});

export { assertValidEntries };

/**
 * KEYS for one decision: the entries' keys in order, then the ban key of each entry whose policy
 * has a ban (`banKeyOf`, same hash tag), then `requestKey` (the record of an idempotent request,
 * same hash tag as the entries) when given.
 */
export function encodeScriptKeys(entries: readonly StoreEntry[], requestKey?: string): string[] {
  const keys: string[] = [];
  appendScriptKeys(keys, entries, requestKey);
  return keys;
}

/**
 * Appends one decision's KEYS (see `encodeScriptKeys`) to `keys`; throws, appending nothing, when
 * `requestKey` is empty or one of the decision's other keys.
 */
function appendScriptKeys(
  keys: string[],
  entries: readonly StoreEntry[],
  requestKey: string | undefined,
): void {
  let bans = false;
  for (let i = 0; i < entries.length; i++)
    if ((entries[i] as StoreEntry).policy.ban !== undefined) bans = true;
  if (requestKey !== undefined) {
    let taken = typeof requestKey !== 'string' || requestKey === '';
    for (let i = 0; i < entries.length && !taken; i++) {
      const entry = entries[i] as StoreEntry;
      taken =
        entry.key === requestKey || (entry.policy.ban !== undefined && banKeyOf(entry.key) === requestKey);
    }
    if (taken) throw new Error('store: "requestKey" must be a non-empty key distinct from the entry keys');
  }
  for (let i = 0; i < entries.length; i++) keys.push((entries[i] as StoreEntry).key);
  if (bans) {
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i] as StoreEntry;
      if (entry.policy.ban !== undefined) keys.push(banKeyOf(entry.key));
    }
  }
  if (requestKey !== undefined) keys.push(requestKey);
}

/**
 * The five ARGV items of a policy in the call's policy table (algorithm, limit, windowMs,
 * intervalMs, shadow) as strings, and the decide features the policy needs (`DECIDE_FEATURE`:
 * shadow, bans), computed once per compiled policy instead of on every call.
 */
interface PolicyArgs {
  readonly args: readonly string[];
  readonly features: number;
}
const policyArgsCache = new WeakMap<CompiledPolicy, PolicyArgs>();

/** A policy's policy-table items and features (see `policyArgsCache`). */
function policyArgsOf(policy: CompiledPolicy): PolicyArgs {
  let cached = policyArgsCache.get(policy);
  if (cached === undefined) {
    cached = {
      args: [
        policy.algorithm,
        String(policy.limit),
        String(policy.windowMs),
        String(policy.intervalMs),
        shadowArg(policy),
      ],
      features:
        (policy.shadow ? DECIDE_FEATURE.shadow : 0) | (policy.ban !== undefined ? DECIDE_FEATURE.bans : 0),
    };
    if (Object.isFrozen(policy)) policyArgsCache.set(policy, cached);
  }
  return cached;
}

/** A policy's five policy-table items (see `policyArgsCache`); the settle codec uses the first four. */
export function argsOf(policy: CompiledPolicy): readonly string[] {
  return policyArgsOf(policy).args;
}

/**
 * The policy table's fifth item: '0' or '1' (shadow), and for a policy with a ban its ban after
 * it, `'<0|1>:<blockMs>:<violations>:<violationWindowMs>:<escalatedBlockMs>'` (lua/decide.lua).
 */
function shadowArg(policy: CompiledPolicy): string {
  const flag = policy.shadow ? '1' : '0';
  const { ban } = policy;
  if (ban === undefined) return flag;
  return `${flag}:${ban.blockMs}:${ban.violations}:${ban.violationWindowMs}:${ban.escalatedBlockMs}`;
}

/** The ARGV head of a call: the explicit time (tests) or '' for Redis TIME. */
export function encodeScriptNow(nowMs?: number): string {
  if (nowMs === undefined) return '';
  if (!Number.isFinite(nowMs)) throw new Error(`store: "nowMs" must be a finite number, got ${nowMs}`);
  return String(nowMs);
}

/**
 * One call of the decide script under construction: decisions are added one by one (each
 * validated before anything of it is added), policies go in the call's policy table once.
 */
export class ScriptCall {
  /** KEYS, in decision order. */
  readonly keys: string[] = [];
  /** Reply items the call will return: four per entry of every decision. */
  replyItems = 0;
  private readonly policyIndex = new Map<CompiledPolicy, string>();
  private readonly policyArgs: string[] = [];
  /** The algorithm every policy of the call uses; null when they use several (undefined: none yet). */
  private algorithm: string | null | undefined = undefined;
  /** The decide features the call uses (`DECIDE_FEATURE` bits): its policies' and its decisions'. */
  private features = 0;
  private readonly decisionArgs: string[] = [];

  /** @param nowArg ARGV[1], from `encodeScriptNow` */
  constructor(readonly nowArg: string) {}

  /**
   * Adds one decision; throws (adding nothing) when its entries or options are invalid. With
   * `requestTtlMs` the decision has a request record, whose key (`requestKey`) comes last in
   * its KEYS; the caller passes both.
   */
  add(entries: readonly StoreEntry[], mode: StoreMode, requestKey?: string, requestTtlMs?: number): void {
    assertValidEntries(entries, mode);
    if (requestTtlMs !== undefined && !(Number.isFinite(requestTtlMs) && requestTtlMs > 0)) {
      throw new Error(`store: "requestTtlMs" must be a positive number of milliseconds, got ${requestTtlMs}`);
    }
    if (requestTtlMs !== undefined && entries.some((entry) => entry.leastCost !== undefined)) {
      throw new Error('store: a lease take cannot have a request record');
    }
    appendScriptKeys(this.keys, entries, requestKey); // the last check: from here on nothing throws
    if (requestTtlMs !== undefined) this.features |= DECIDE_FEATURE.records;
    if (mode === 'consume' && requestTtlMs === undefined && isUnitEach(entries)) {
      // The short form: one item, the policy indices joined by '+' ('1', '1+2'), instead of
      // 3 + 2 per entry ('consume', '', '2', '1', '1', '2', '1').
      let item = this.indexOf((entries[0] as StoreEntry).policy);
      for (let i = 1; i < entries.length; i++) item += `+${this.indexOf((entries[i] as StoreEntry).policy)}`;
      this.decisionArgs.push(item);
    } else {
      this.addFullForm(entries, mode, requestTtlMs);
    }
    this.replyItems += replyItemsOf(entries);
  }

  /** The full form of a decision: mode, requestTtlMs, entryCount, then policy index and cost per entry. */
  private addFullForm(
    entries: readonly StoreEntry[],
    mode: StoreMode,
    requestTtlMs: number | undefined,
  ): void {
    const args = this.decisionArgs;
    args.push(mode, requestTtlMs === undefined ? '' : String(requestTtlMs), String(entries.length));
    for (let i = 0; i < entries.length; i++) {
      const { policy, cost, leastCost, slotId, maxWaitMs } = entries[i] as StoreEntry;
      if (leastCost !== undefined) {
        args.push(this.indexOf(policy), `${cost}>${leastCost}`);
        this.features |= DECIDE_FEATURE.leases;
      } else if (slotId !== undefined && mode === 'consume') {
        args.push(this.indexOf(policy), `1@${slotId}`);
        this.features |= DECIDE_FEATURE.slots;
      } else if (waitsForTurn(maxWaitMs)) {
        args.push(this.indexOf(policy), `${cost}~${maxWaitMs}`);
        this.features |= DECIDE_FEATURE.waits;
      } else args.push(this.indexOf(policy), cost === 1 ? '1' : String(cost));
    }
  }

  /** The policy's index in the call's policy table ('1', '2', ...), added on first use. */
  private indexOf(policy: CompiledPolicy): string {
    let index = this.policyIndex.get(policy);
    if (index === undefined) {
      index = String(this.policyIndex.size + 1);
      this.policyIndex.set(policy, index);
      if (this.algorithm === undefined) this.algorithm = policy.algorithm;
      else if (this.algorithm !== policy.algorithm) this.algorithm = null;
      const { args, features } = policyArgsOf(policy);
      this.features |= features;
      for (const arg of args) this.policyArgs.push(arg);
    }
    return index;
  }

  /**
   * The decide script for the call: the smallest shape that holds its policies' one algorithm
   * (every algorithm for a mix) and carries the features its policies and decisions use.
   */
  script(): ScriptSource {
    return decideScriptOf(this.algorithm ?? null, this.features);
  }

  /** ARGV of the call. */
  args(): string[] {
    return [this.nowArg, String(this.policyIndex.size)].concat(this.policyArgs, this.decisionArgs);
  }
}

/** True when every entry costs one unit, none a lease take, a slot nor waiting: a decision the short form carries. */
function isUnitEach(entries: readonly StoreEntry[]): boolean {
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i] as StoreEntry;
    if (entry.cost !== 1 || hasFifthItem(entry) || waitsForTurn(entry.maxWaitMs)) return false;
  }
  return true;
}

/**
 * ARGV for a call of ONE decision (KEYS from `encodeScriptKeys`). `nowMs` is for tests
 * only: without it the script reads Redis `TIME`. `requestTtlMs` turns on the request
 * record: pass the record key to `encodeScriptKeys` too. In mode 'consume' a recorded
 * request replays its saved reply and charges nothing; otherwise the reply is saved for
 * `requestTtlMs`.
 */
export function encodeScriptArgs(
  entries: readonly StoreEntry[],
  mode: StoreMode,
  nowMs?: number,
  requestTtlMs?: number,
): string[] {
  const call = new ScriptCall(encodeScriptNow(nowMs));
  call.add(entries, mode, undefined, requestTtlMs);
  return call.args();
}

/** Number of reply items per entry (a lease take and a concurrency entry have one more). */
export const REPLY_ITEMS_PER_ENTRY = 4;

/** Whether an entry's reply has a fifth item: a lease take's `chargedUnits`, a concurrency entry's `reclaimed`. */
export function hasFifthItem(entry: StoreEntry): boolean {
  return entry.leastCost !== undefined || holdsSlots(entry.policy);
}

/** Reply items of one decision's entries: four each, five for a lease take or a concurrency entry. */
export function replyItemsOf(entries: readonly StoreEntry[]): number {
  let items = entries.length * REPLY_ITEMS_PER_ENTRY;
  for (let i = 0; i < entries.length; i++) if (hasFifthItem(entries[i] as StoreEntry)) items += 1;
  return items;
}

function toNumber(value: unknown, what: string): number {
  const n = typeof value === 'number' ? value : typeof value === 'string' ? Number(value) : Number.NaN;
  if (Number.isNaN(n)) throw new Error(`store: unexpected decide script reply (${what})`);
  return n === 0 ? 0 : n; // no -0
}

/** Turns the decide script's reply to a call of ONE decision into one verdict per entry. */
export function decodeScriptReply(reply: unknown, entries: readonly StoreEntry[]): StoreVerdict[] {
  if (!Array.isArray(reply) || reply.length !== replyItemsOf(entries)) {
    throw new Error('store: unexpected decide script reply (shape)');
  }
  return decodeVerdicts(reply, entries, 0);
}

/**
 * One decision's verdicts from a reply whose shape the caller checked: the items from
 * `offset` on, four per entry.
 */
export function decodeVerdicts(
  reply: readonly unknown[],
  entries: readonly StoreEntry[],
  offset: number,
): StoreVerdict[] {
  const verdicts: StoreVerdict[] = [];
  let k = offset;
  for (let i = 0; i < entries.length; i++, k += REPLY_ITEMS_PER_ENTRY) {
    const allowed = reply[k];
    let verdict: StoreVerdict;
    if (allowed !== 0 && allowed !== 1 && allowed !== '0' && allowed !== '1') {
      if (allowed !== 2 && allowed !== '2')
        throw new Error('store: unexpected decide script reply (allowed)');
      verdict = bannedVerdict(reply, k);
    } else {
      verdict = {
        allowed: allowed === 1 || allowed === '1',
        remaining: toNumber(reply[k + 1], 'remaining'),
        resetMs: toNumber(reply[k + 2], 'resetMs'),
        retryAfterMs: toNumber(reply[k + 3], 'retryAfterMs'),
      };
      const waitMs = verdict.allowed ? verdict.retryAfterMs : 0; // allowed with a wait: a reserved turn
      if (waitMs > 0) verdict = { ...verdict, retryAfterMs: 0, waitMs };
    }
    const entry = entries[i] as StoreEntry;
    if (hasFifthItem(entry)) {
      const fifth = toNumber(reply[k + REPLY_ITEMS_PER_ENTRY], 'fifth item');
      if (entry.leastCost !== undefined) verdict = { ...verdict, chargedUnits: fifth };
      else if (fifth > 0) verdict = { ...verdict, reclaimedSlots: fifth };
      k += 1;
    }
    verdicts.push(verdict);
  }
  return verdicts;
}

/** The verdict of reply items from `k` whose `allowed` is 2: denied, the identity banned. */
function bannedVerdict(reply: readonly unknown[], k: number): StoreVerdict {
  return {
    allowed: false,
    remaining: toNumber(reply[k + 1], 'remaining'),
    resetMs: toNumber(reply[k + 2], 'resetMs'),
    retryAfterMs: toNumber(reply[k + 3], 'retryAfterMs'),
    banned: true,
  };
}
