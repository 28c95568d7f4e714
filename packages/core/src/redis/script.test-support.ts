/**
 * Test support: calls the decide script through ioredis directly (EVALSHA, EVAL on
 * NOSCRIPT), with an explicit time, as a `Decide` for the shared invariant checks.
 */
import type { Redis } from 'ioredis';
import type { Decide } from '../algorithms/testing.test-support.js';
import type { StoreEntry, StoreMode, StoreVerdict } from '../types.js';
import { DECIDE_SCRIPT, decodeScriptReply, encodeScriptArgs, encodeScriptKeys } from './script.js';

/** An idempotent request: its record key and how long the record lives. */
export interface TestRequest {
  readonly key: string;
  readonly ttlMs: number;
}

/** Runs the decide script; `nowMs` undefined = Redis TIME. */
export async function evalDecide(
  redis: Redis,
  entries: readonly StoreEntry[],
  mode: StoreMode,
  nowMs?: number,
  request?: TestRequest,
): Promise<StoreVerdict[]> {
  const keys = encodeScriptKeys(entries, request?.key);
  const args = encodeScriptArgs(entries, mode, nowMs, request?.ttlMs);
  let reply: unknown;
  try {
    reply = await redis.evalsha(DECIDE_SCRIPT.sha1, keys.length, ...keys, ...args);
  } catch (error) {
    if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
    reply = await redis.eval(DECIDE_SCRIPT.source, keys.length, ...keys, ...args);
  }
  return decodeScriptReply(reply, entries);
}

/** The decide script as a `Decide` with explicit time. */
export function redisDecide(redis: Redis): Decide {
  return (entries, mode, nowMs) => evalDecide(redis, entries, mode, nowMs);
}
