/** The decision for a deny-listed request, the same object every time. */
import type { Decision, PolicyResult } from '../types.js';

/**
 * The decision for a deny-listed request: denied, outcome `forbidden`, source `deny-list`, no
 * policy asked (nothing charged, nothing reported as a policy's decision).
 */
export const FORBIDDEN: Decision = Object.freeze({
  allowed: false,
  outcome: 'forbidden',
  policy: undefined,
  limit: 0,
  remaining: 0,
  resetMs: 0,
  retryAfterMs: 0,
  shadowed: false,
  source: 'deny-list',
  results: Object.freeze([]) as readonly PolicyResult[],
}) as Decision;
/** `FORBIDDEN`, settled. */
export const FORBIDDEN_PROMISE: Promise<Decision> = Promise.resolve(FORBIDDEN);
