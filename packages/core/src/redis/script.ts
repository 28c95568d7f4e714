/**
 * The decide script (lua/decide.lua + the algorithm files, embedded at build time) and
 * the codec between `StoreEntry[]` and its KEYS/ARGV/reply. Web-standard: no `node:`.
 *
 * KEYS: the entries' keys in order, then the request record key when there is one.
 * ARGV: `[mode, nowMs | '', requestTtlMs | '', ...per entry: algorithm, limit, windowMs,
 * intervalMs, cost]`. Reply: four items per entry: `allowed` (1/0), `remaining`,
 * `resetMs`, `retryAfterMs` (decimal strings). See lua/decide.lua for the full contract.
 */

import { assertValidEntries } from '../algorithms/validate.js';
import {
  DECIDE_SCRIPT_SHA1,
  DECIDE_SCRIPT_SOURCE,
  RESET_SCRIPT_SHA1,
  RESET_SCRIPT_SOURCE,
} from '../generated/scripts.js';
import type { StoreEntry, StoreMode, StoreVerdict } from '../types.js';

/** The decide script: Lua source and its SHA1 (hex), for EVALSHA with EVAL as fallback. */
export const DECIDE_SCRIPT: { readonly source: string; readonly sha1: string } = Object.freeze({
  source: DECIDE_SCRIPT_SOURCE,
  sha1: DECIDE_SCRIPT_SHA1,
});

/**
 * The reset script (lua/reset.lua): `DEL` of every key in KEYS, no ARGV; replies with how
 * many existed. For stores that reach Redis only through eval.
 */
export const RESET_SCRIPT: { readonly source: string; readonly sha1: string } = Object.freeze({
  source: RESET_SCRIPT_SOURCE,
  sha1: RESET_SCRIPT_SHA1,
});

export { assertValidEntries };

/** Number of ARGV items per entry. */
export const ARGS_PER_ENTRY = 5;

/** Number of reply items per entry. */
export const REPLY_ITEMS_PER_ENTRY = 4;

/**
 * KEYS for the decide script: the entries' keys in order, then `requestKey` (the record
 * of an idempotent request, same hash tag as the entries) when given.
 */
export function encodeScriptKeys(entries: readonly StoreEntry[], requestKey?: string): string[] {
  const keys = entries.map((e) => e.key);
  if (requestKey !== undefined) {
    if (typeof requestKey !== 'string' || requestKey === '' || keys.includes(requestKey)) {
      throw new Error('store: "requestKey" must be a non-empty key distinct from the entry keys');
    }
    keys.push(requestKey);
  }
  return keys;
}

/**
 * ARGV for the decide script (KEYS from `encodeScriptKeys`). `nowMs` is for tests only:
 * without it the script reads Redis `TIME`. `requestTtlMs` turns on the request record:
 * pass the record key to `encodeScriptKeys` too. In mode 'consume' a recorded request
 * replays its saved reply and charges nothing; otherwise the reply is saved for
 * `requestTtlMs`.
 */
export function encodeScriptArgs(
  entries: readonly StoreEntry[],
  mode: StoreMode,
  nowMs?: number,
  requestTtlMs?: number,
): (string | number)[] {
  assertValidEntries(entries);
  if (nowMs !== undefined && !Number.isFinite(nowMs)) {
    throw new Error(`store: "nowMs" must be a finite number, got ${nowMs}`);
  }
  if (requestTtlMs !== undefined && !(Number.isFinite(requestTtlMs) && requestTtlMs > 0)) {
    throw new Error(`store: "requestTtlMs" must be a positive number of milliseconds, got ${requestTtlMs}`);
  }
  const args: (string | number)[] = [
    mode,
    nowMs === undefined ? '' : String(nowMs),
    requestTtlMs === undefined ? '' : String(requestTtlMs),
  ];
  for (const { policy, cost } of entries) {
    args.push(
      policy.algorithm,
      String(policy.limit),
      String(policy.windowMs),
      String(policy.intervalMs),
      String(cost),
    );
  }
  return args;
}

function toNumber(value: unknown, what: string): number {
  const n = typeof value === 'number' ? value : typeof value === 'string' ? Number(value) : Number.NaN;
  if (Number.isNaN(n)) throw new Error(`store: unexpected decide script reply (${what})`);
  return n === 0 ? 0 : n; // no -0
}

/** Turns the decide script's reply into one verdict per entry, in entry order. */
export function decodeScriptReply(reply: unknown, entries: readonly StoreEntry[]): StoreVerdict[] {
  if (!Array.isArray(reply) || reply.length !== entries.length * REPLY_ITEMS_PER_ENTRY) {
    throw new Error('store: unexpected decide script reply (shape)');
  }
  const verdicts: StoreVerdict[] = [];
  for (let i = 0; i < entries.length; i++) {
    const k = i * REPLY_ITEMS_PER_ENTRY;
    const allowed = toNumber(reply[k], 'allowed');
    if (allowed !== 0 && allowed !== 1) throw new Error('store: unexpected decide script reply (allowed)');
    verdicts.push({
      allowed: allowed === 1,
      remaining: toNumber(reply[k + 1], 'remaining'),
      resetMs: toNumber(reply[k + 2], 'resetMs'),
      retryAfterMs: toNumber(reply[k + 3], 'retryAfterMs'),
    });
  }
  return verdicts;
}
