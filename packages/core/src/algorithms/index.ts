/**
 * The five algorithms in TypeScript, operation for operation the same as lua/*.lua, so
 * MemoryStore and the Redis decide script decide identically for identical inputs and clock.
 */
import type { Algorithm } from '../types.js';
import { fixedWindow } from './fixed-window.js';
import { gcra } from './gcra.js';
import { slidingLog } from './sliding-log.js';
import { slidingWindow } from './sliding-window.js';
import { tokenBucket } from './token-bucket.js';
import type { AlgorithmFn } from './types.js';

export { type FixedWindowState, fixedWindow } from './fixed-window.js';
export { type GcraState, gcra } from './gcra.js';
export { type SlidingLogState, slidingLog } from './sliding-log.js';
export { type SlidingWindowState, slidingWindow } from './sliding-window.js';
export { type TokenBucketState, tokenBucket } from './token-bucket.js';
export { type AlgorithmFn, type AlgorithmParams, EPS, type Evaluation, whole } from './types.js';

/** Every algorithm by name. The state type is opaque here; a store keeps what `charge()` returned. */
export const ALGORITHMS: { readonly [A in Algorithm]: AlgorithmFn<unknown> } = {
  'token-bucket': tokenBucket as AlgorithmFn<unknown>,
  gcra: gcra as AlgorithmFn<unknown>,
  'sliding-window': slidingWindow as AlgorithmFn<unknown>,
  'fixed-window': fixedWindow as AlgorithmFn<unknown>,
  'sliding-log': slidingLog as AlgorithmFn<unknown>,
};
