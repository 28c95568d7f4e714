/**
 * The rows of the reset tests: each remembers a denial in-process in its own way (the deny cache,
 * a lease's denied take, the local stage), and a reset on another instance must reach it within
 * `denyCache.maxAgeMs` (1 s), plus, for the local stage, the time its bucket takes to let the
 * next request through.
 */
import type { PolicyInput } from '../../packages/core/src/types.js';

/** One admission per hour: only a reset lets an identity in again during a test. */
const HOURLY = { algorithm: 'fixed-window', limit: 1, window: '1h' } as const;

/** The policies of every reset worker's limiters. */
export const RESET_POLICIES: PolicyInput[] = [
  { name: 'login', ...HOURLY },
  { name: 'leased', ...HOURLY, lease: { units: 1, ttlMs: '1s' } },
  // 20/s: the bucket lets a request through every 50 ms while the test checks every 10 ms.
  { name: 'staged', ...HOURLY, local: { burst: 2, rate: '20/s' } },
];

/** A row: a policy, the deny cache on or off, and how much later than 1 s the reset may be seen. */
export const RESET_ROWS = {
  'deny cache': { policy: 'login', denyCache: true, slackMs: 0 },
  'lease and deny cache': { policy: 'leased', denyCache: true, slackMs: 0 },
  'lease alone': { policy: 'leased', denyCache: false, slackMs: 0 },
  'local stage': { policy: 'staged', denyCache: true, slackMs: 50 },
} as const;

export type ResetRow = keyof typeof RESET_ROWS;
