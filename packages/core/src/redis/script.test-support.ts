/**
 * Test support: calls the decide script through ioredis directly (EVALSHA, EVAL on
 * NOSCRIPT), with an explicit time, as a `Decide` for the shared invariant checks. The script is
 * the shape `RedisStore` picks for the decision (`decideScriptFor`): the smallest that holds its
 * policies' algorithm (every algorithm for a mix) and carries the features it uses, so the shared
 * suites run every shape.
 */

import type { Redis } from 'ioredis';
import type { Decide } from '../algorithms/testing.test-support.js';
import type { StoreEntry, StoreMode, StoreVerdict } from '../types.js';
import { decideScriptFor, decodeScriptReply, encodeScriptArgs, encodeScriptKeys } from './script.js';
import type { ScriptSource } from './transport.js';

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
  const script = decideScriptFor(entries, mode, request?.ttlMs);
  return decodeScriptReply(await callScript(redis, script, keys, args), entries);
}

/** EVALSHA of `script`, EVAL on NOSCRIPT. */
async function callScript(
  redis: Redis,
  script: ScriptSource,
  keys: readonly string[],
  args: readonly string[],
): Promise<unknown> {
  try {
    return await redis.evalsha(script.sha1, keys.length, ...keys, ...args);
  } catch (error) {
    if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
    return await redis.eval(script.source, keys.length, ...keys, ...args);
  }
}

/**
 * The decide script as a `Decide` with explicit time. Form `short` sends what `RedisStore`
 * sends (a consume of one unit of each policy as one item, its policy indices joined by '+');
 * form `full` sends every decision in the full form (mode, requestTtlMs, entryCount, policy, cost).
 */
export function redisDecide(redis: Redis, form: 'short' | 'full' = 'short'): Decide {
  if (form === 'short') return (entries, mode, nowMs) => evalDecide(redis, entries, mode, nowMs);
  return async (entries, mode, nowMs) => {
    const keys = encodeScriptKeys(entries);
    const args = fullFormArgs(encodeScriptArgs(entries, mode, nowMs));
    return decodeScriptReply(await callScript(redis, decideScriptFor(entries, mode), keys, args), entries);
  };
}

/** The ARGV of a call of one decision with its short form (if it has one) written out in full. */
export function fullFormArgs(args: readonly string[]): string[] {
  const policyArgsEnd = 2 + 5 * Number(args[1]);
  if (args.length !== policyArgsEnd + 1) return [...args];
  const indices = (args[policyArgsEnd] as string).split('+');
  return [
    ...args.slice(0, policyArgsEnd),
    'consume',
    '',
    String(indices.length),
    ...indices.flatMap((index) => [index, '1']),
  ];
}
